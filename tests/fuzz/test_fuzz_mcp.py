"""Issue 41: hostile MCP tool calls (bench/fuzz_mcp.py) through the official client, a bounded sample.

The bench runs >= 1,000 cases per surface; here 12 per surface of the same seed (every tool reachable:
cases pick tools at random), and the checker itself is shown failing: an unexpected error, a timeout, a
missing fix line and a change on disk are each counted as bad.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import anyio
import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = 12  # per surface: 60 calls


def _bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("fuzz_mcp", REPO / "bench" / "fuzz_mcp.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_mcp"] = module
    spec.loader.exec_module(module)
    return module


def test_hostile_calls_end_typed_and_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fuzz = _bench()
    monkeypatch.chdir(tmp_path)  # the bench changes folder and environment and restores both
    counts, examples, _slowest = anyio.run(fuzz.run, 4141, CASES, fuzz.SURFACES, None, tmp_path / "work")
    bad = {s: {o: n for o, n in c.items() if o in fuzz.BAD and n} for s, c in counts.items()}
    assert all(not b for b in bad.values()), (bad, examples)
    assert all(sum(c.values()) == CASES for c in counts.values())
    assert sum(c["typed"] for c in counts.values()) > CASES  # most hostile calls are refused, by name
    assert os.getcwd() == str(tmp_path)


def test_the_checker_counts_what_is_bad(tmp_path: Path) -> None:
    fuzz = _bench()
    typed = fuzz.kernelpilot_error_names()
    assert fuzz.classify("t", False, "fine", typed) == "ok"
    assert fuzz.classify("t", True, "Error executing tool t: InputFileError: x\nfix: y", typed) == "typed"
    assert fuzz.classify("t", True, "t: invalid arguments: n: bad\nfix: y", typed) == "typed"
    crash = "KeyError: 'k'\nfix: check the arguments: kernelpilot has no typed error for this case yet"
    assert fuzz.classify("t", True, crash, typed) == "traceback"
    assert fuzz.classify("t", True, "Error executing tool t", typed) == "untyped"
    assert fuzz.classify("t", True, "InputFileError: no fix line", typed) == "untyped"
    assert (
        fuzz.classify("t", True, "Error executing tool t: ToolTimeoutError: t did not\nfix: z", typed)
        == "hang"
    )
    assert fuzz.classify("t", True, "MemoryError: \nfix: z", typed) == "memory"
    fuzz.make_sandbox(tmp_path / "box")
    before = fuzz.snapshot(tmp_path / "box")
    (tmp_path / "box" / "fifo").unlink()
    (tmp_path / "box" / "fifo").write_text("replaced")
    (tmp_path / "box" / "made.txt").write_text("new")
    moved = fuzz.changes(before, fuzz.snapshot(tmp_path / "box"))
    assert moved == [str(tmp_path / "box" / "fifo"), str(tmp_path / "box" / "made.txt")]
    case = fuzz.Case(
        "output_paths", 0, "t", {}, [str(tmp_path / "box" / "made.txt"), str(tmp_path / "box" / "fifo")]
    )
    assert fuzz.allowed_change(str(tmp_path / "box" / "made.txt"), case, before, ok=True)
    assert not fuzz.allowed_change(str(tmp_path / "box" / "made.txt"), case, before, ok=False)
    assert not fuzz.allowed_change(str(tmp_path / "box" / "fifo"), case, before, ok=True)  # a FIFO replaced
