"""`python -m kernelpilot.timing.compare_process REQUEST_JSON`: what eval's paired timing runs, printing what
`kernelpilot --json compare` prints, so `tasks.paired.compare_outcome` reads it the same way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.tasks.paired import compare_outcome
from kernelpilot.timing.compare_process import main
from kernelpilot.timing.models import CompareRequest, CompareResult

FACTORY = """def make():
    xs = list(range(2000))
    return lambda: sum(xs)
"""


def test_a_request_is_timed_and_printed_as_the_cli_prints_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "k.py").write_text(FACTORY)
    req = CompareRequest(a="k.py:make", b="k.py:make", workdir=str(tmp_path), device="cpu", max_pairs=20)
    path = tmp_path / "req.json"
    path.write_text(req.model_dump_json())
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    res = CompareResult.model_validate_json(out)
    assert res.pairs >= 16 and res.verdict_mode == "cpu" and res.a == "k.py:make"
    timed = compare_outcome(0, out, "")
    assert (
        timed.compare is not None
        and timed.fields["pairs"] == res.pairs
        and timed.fields["method"] == "paired"
    )


def test_a_typed_error_goes_to_stderr_as_the_cli_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    req = CompareRequest(a="k.py:make", b="k.py:make", workdir=str(tmp_path / "nope"))
    path = tmp_path / "req.json"
    path.write_text(req.model_dump_json())
    code = main([str(path)])
    cap = capsys.readouterr()
    assert code == 2 and cap.out == ""
    doc = json.loads(cap.err)
    assert doc["error"] == "input_file" and "is not a directory" in doc["message"]
    timed = compare_outcome(code, cap.out, cap.err)
    assert timed.fields["status"] == "failed" and "InputFileError: workdir" in timed.fields["output_tail"]


def test_a_missing_or_bad_request_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 2
    assert main([str(tmp_path / "missing.json")]) == 2
    (tmp_path / "bad.json").write_text('{"a": 1}')
    assert main([str(tmp_path / "bad.json")]) == 2
    assert capsys.readouterr().err.count("cannot read the compare request") == 2


def test_a_candidate_that_prints_cannot_garble_the_result_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The candidate runs in the timing process: what it prints goes to stdout, the result to its own file,
    which eval reads, so a chatty (or hostile) candidate still gets its verdict read right."""
    (tmp_path / "k.py").write_text(FACTORY)
    (tmp_path / "loud.py").write_text(
        'def make():\n    xs = list(range(2000))\n\n    def run():\n        print("{not json")\n'
        "        return sum(xs)\n\n    return run\n"
    )
    req = CompareRequest(a="k.py:make", b="loud.py:make", workdir=str(tmp_path), device="cpu", max_pairs=20)
    path, out = tmp_path / "req.json", tmp_path / "res.json"
    path.write_text(req.model_dump_json())
    assert main([str(path), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "{not json" in printed
    assert compare_outcome(0, printed, "").fields["status"] == "failed"  # read from stdout: garbled
    timed = compare_outcome(0, printed, "", out.read_text())
    assert timed.compare is not None and timed.fields["method"] == "paired" and timed.fields["pairs"] >= 16
