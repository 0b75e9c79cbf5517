"""The documented campaign keeps what the diagnosis needs (issue 42).

`skills/gpu-kernel-optimizer/cli.md`, section "Bottleneck", saves `isa fit` and `profile run --mode full` as
JSON files and feeds them to `bottleneck`. This test takes those command lines out of cli.md (so the doc and
the test cannot drift), maps the walk-through's softmax names to a recorded H100 kernel with a known cause
(`transpose_smem_nopad`: 32-way shared bank conflicts, tests/fixtures/profile/rootcause) and runs them through
the real CLI. Only `ncu` is replaced, at the toolchain seam (`KERNELPILOT_NCU`), by a script that prints the
raw page ncu recorded for that kernel with `--set full`. The verdict must equal the one `bottleneck` gives on
the recorded raw page itself: the same verdict, memory level and causes in the same order.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from tests.skills.test_skill_commands import CLI_MD, REPO, extract_steps

RC = REPO / "tests" / "fixtures" / "profile" / "rootcause"
KERNEL = "transpose_smem_nopad"
RAW_PAGE = RC / "full" / f"{KERNEL}_raw.csv"
CUBIN = RC / "isa" / "rc_kernels.cubin"
BLOCK = "256"  # the recorded launch: 32x8 threads per 32x32 tile (rootcause/rc_kernels.cu, TD x TR)
PLACEHOLDERS = {"median": "1106.0"}  # the campaign's recorded baseline (test_skill_commands)
_PLACEHOLDER = re.compile(r"<([A-Za-z][^<>\n]*)>")


def _section(title: str) -> list[str]:
    """Fenced command lines of one `## title` section of cli.md, continuations joined, in order."""
    text = (REPO / CLI_MD).read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end if end > 0 else len(text)) + 1
    return [s.text for s in extract_steps(text, CLI_MD) if s.fenced and first <= s.line <= last]


def _to_recorded_kernel(tokens: list[str]) -> list[str]:
    """The walk-through's softmax names -> the recorded transpose kernel; every option stays as written."""
    out: list[str] = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i else ""
        if tok.endswith(".cubin"):
            tok = str(CUBIN)
        elif prev == "--kernel":
            tok = f"^{KERNEL}$"
        elif prev == "--block-size":
            tok = BLOCK
        elif tok.startswith("regex:"):
            tok = f"regex:^{KERNEL}$"
        out.append(tok)
    return out


def _fake_ncu(folder: Path) -> Path:
    """`ncu` that prints the recorded `--set full` raw page when asked for exactly that, and refuses else."""
    script = folder / "ncu"
    script.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" --set full "*"--kernel-name regex:^{KERNEL}$ "*" --csv --page raw "*)\n'
        f"  cat {shlex.quote(str(RAW_PAGE))} ;;\n"
        '*) echo "==ERROR== this stand-in replays only the recorded --set full raw page" >&2; exit 1 ;;\n'
        "esac\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return script


def _kp(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    from kernelpilot.adapters.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(cwd):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _run_documented(lines: list[str], root: Path) -> dict[str, Any]:
    """Run the section's kernelpilot lines (`$WS` in `root`, `> file` honoured); the last verdict JSON."""
    ws = root / "ws"
    (ws / "profiles").mkdir(parents=True)
    verdict: dict[str, Any] = {}
    for line in lines:
        text = _PLACEHOLDER.sub(lambda m: PLACEHOLDERS[m.group(1)], line).replace("$WS", str(ws))
        tokens = shlex.split(text, comments=True)
        assert tokens[0] == "kernelpilot", f"cli.md Bottleneck: a line this test does not know: {line}"
        redirect = None
        if ">" in tokens:
            i = tokens.index(">")
            redirect, tokens = Path(tokens[i + 1]), tokens[:i]
        code, out, err = _kp(_to_recorded_kernel(tokens[1:]), root)
        assert code == 0, f"`{line}` exited {code}: {err[-600:]}"
        if redirect is not None:
            redirect.write_text(out, encoding="utf-8")
        if "bottleneck" in tokens[1:3]:
            verdict = json.loads(out)
    assert verdict, "cli.md's Bottleneck section has no `kernelpilot --json bottleneck` line"
    return verdict


def _shape(doc: dict[str, Any]) -> list[tuple[str, str, str | None, list[str]]]:
    """What the verdict says: per kernel the verdict, memory level and causes in rank order."""
    vs = doc["verdicts"]
    return [(v["kernel"], v["verdict"], v["memory_level"], [c["rule"] for c in v["causes"]]) for v in vs]


def _reference(root: Path) -> dict[str, Any]:
    """`bottleneck` on the recorded raw page itself, with the ISA facts the documented run saved."""
    fit = root / "ws" / "profiles" / "fit.json"
    code, out, err = _kp(["--json", "bottleneck", str(RAW_PAGE), "--isa-facts-json", str(fit)], root)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(out)
    return doc


@pytest.fixture
def ncu_replay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path)))
    root = tmp_path / "project"
    root.mkdir()
    return root


def test_documented_campaign_gives_the_full_raw_profiles_verdict(ncu_replay: Path) -> None:
    lines = _section("Bottleneck")
    assert any(" profile run " in f" {ln} " for ln in lines) and any("bottleneck" in ln for ln in lines)
    got = _run_documented(lines, ncu_replay)
    want = _reference(ncu_replay)
    assert _shape(got) == _shape(want)
    # the recorded kernel's known cause leads: 32-way bank conflicts, ~81% of its time
    assert want["verdicts"][0]["causes"][0]["rule"] == "shared_bank_conflicts"


def test_the_check_fails_when_the_profile_is_saved_without_raw_metrics(ncu_replay: Path) -> None:
    """The same section with `--include-raw-metrics` taken out loses the main cause: the check has teeth."""
    lines = [ln.replace(" --include-raw-metrics", "") for ln in _section("Bottleneck")]
    got = _run_documented(lines, ncu_replay)
    assert _shape(got) != _shape(_reference(ncu_replay))
    assert "shared_bank_conflicts" not in _shape(got)[0][3]
