"""`workload read` of every recorded trace kind equals a golden result recorded before the reader was sped up.

The golden file (tests/fixtures/workload/golden/read_golden.json, PROVENANCE.md says how it was made) holds
the whole JSON model of each case and, for Kineto traces, a digest of every activity's context (step, launch
call, ops, range, module, phase), so an optimization of the reader, the breakdown or the opportunities is
proven to change nothing. Floats are compared exactly: summation order is part of the result.
Re-record (only for an intended change of results, named in the commit):
`PYTHONPATH=server .venv/bin/python tests/workload/test_read_golden.py --write`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest
from kernelpilot.workload.readers.detect import read_trace

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
GOLDEN = FIXTURES / "workload" / "golden" / "read_golden.json"

# (case id, fixture path under tests/fixtures, read options)
CASES: list[tuple[str, str, dict[str, Any]]] = [
    ("decode", "workload/h100_decode_trace.json", {}),
    ("decode_skip1", "workload/h100_decode_trace.json", {"skip_steps": 1}),
    ("decode_graph", "workload/h100_decode_graph_trace.json", {}),
    ("train", "workload/h100_train_trace.json", {}),
    ("three_kernels_steps10", "timing/three_kernels_trace.json", {"steps": 10}),
    ("mi350x_trace", "workload/mi350x_flash_attn_kernel_trace.csv", {}),
    ("mi350x_stats", "workload/mi350x_flash_attn_kernel_stats.csv", {}),
    ("ncu_decode_drill", "workload/h100_decode_drill_ncu_raw.csv", {}),
    ("ncu_prefill_drill", "workload/h100_prefill_drill_ncu_raw.csv", {}),
    ("ncu_launches50", "profile/ncu/minimal/launches50_min.csv", {}),
]
ACTIVITY_FIELDS = [
    "name",
    "start_us",
    "dur_us",
    "kind",
    "step",
    "launch_ts_us",
    "launch_dur_us",
    "graph",
    "op",
    "top_op",
    "shapes",
    "range",
    "module",
    "phase",
    "grid",
    "block",
    "stream",
]


def _model(rel: str, opts: dict[str, Any]) -> dict[str, Any]:
    res = read_workload(WorkloadReadRequest(path=str(FIXTURES / rel), **opts))
    doc = res.model_dump(mode="json")
    doc["source"] = rel  # the absolute path differs between checkouts
    # so does every path a next command names (workload isolate's next step quotes the trace)
    text = json.dumps(doc).replace(str(FIXTURES) + "/", "<fixtures>/")
    return dict(json.loads(text))


def _activity_digest(rel: str, opts: dict[str, Any]) -> str | None:
    """sha256 of every activity's fields in reader order (None for formats without a Kineto timeline)."""
    trace = read_trace(FIXTURES / rel, "auto", opts.get("steps"), opts.get("skip_steps", 0))
    if trace.format != "kineto":
        return None
    rows = [[getattr(a, f) for f in ACTIVITY_FIELDS] for a in trace.activities]
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()


def _case(rel: str, opts: dict[str, Any]) -> dict[str, Any]:
    return {"model": _model(rel, opts), "activities_sha256": _activity_digest(rel, opts)}


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(GOLDEN.read_text())
    return doc


# the golden was recorded on CPython 3.11: from 3.12 `sum()` of floats is compensated, so sums may differ
# in the last bits there (and only there are floats compared to 1e-12 instead of exactly)
GOLDEN_PYTHON = (3, 11)


def _same(got: Any, want: Any) -> bool:
    if sys.version_info[:2] == GOLDEN_PYTHON:
        return bool(got == want)
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    if isinstance(got, dict) and isinstance(want, dict):
        return got.keys() == want.keys() and all(_same(got[k], want[k]) for k in got)
    if isinstance(got, list) and isinstance(want, list):
        return len(got) == len(want) and all(_same(a, b) for a, b in zip(got, want, strict=True))
    return bool(got == want)


@pytest.mark.parametrize(("case", "rel", "opts"), CASES, ids=[c[0] for c in CASES])
def test_read_equals_golden(golden: dict[str, Any], case: str, rel: str, opts: dict[str, Any]):
    want = golden[case]
    got = _case(rel, opts)
    for key in want["model"]:  # field by field first: a failure names the part that changed
        assert _same(got["model"][key], want["model"][key]), f"{case}: {key} differs from the golden"
    assert _same(got, want)


def test_golden_covers_every_trace_kind_in_the_fixtures(golden: dict[str, Any]):
    formats = {golden[c]["model"]["format"] for c, _, _ in CASES}
    assert formats == {"kineto", "rocprof_trace", "rocprof_stats", "ncu_csv"}
    assert sorted(golden) == sorted(c for c, _, _ in CASES)


def test_json_fallback_without_msgspec_reads_the_same(golden: dict[str, Any]):
    """A bare copy of the tree without msgspec (readers.kineto_events) decodes with the json module: the
    Kineto cases must equal the golden there too."""
    kineto = [c for c, rel, _ in CASES if rel.endswith(".json")]
    code = (
        "import json, sys; sys.modules['msgspec'] = None; sys.path.insert(0, 'tests/workload')\n"
        "import test_read_golden as g\n"
        "from kernelpilot.workload.readers import kineto_events\n"
        "assert kineto_events.msgspec is None\n"
        f"print(json.dumps({{c: g._case(rel, o) for c, rel, o in g.CASES if c in {kineto!r}}}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "server")}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert sorted(got) == sorted(kineto) and len(kineto) == 5
    for case in kineto:
        assert _same(got[case], golden[case]), f"{case}: the json fallback differs from the golden"


def _bench() -> Any:
    """bench/workload_bench.py as a module: its `replicate` builds the bench's 100,000-kernel trace."""
    spec = importlib.util.spec_from_file_location("workload_bench", ROOT / "bench" / "workload_bench.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_replicated_trace_scales_counts_exactly(tmp_path: Path):
    """The bench's trace is the decode fixture copied 247 times; 4 copies must read as 4x its steps and
    launches with the same per-step figures (each copy's steps identical to the original's)."""
    bench = _bench()
    src = FIXTURES / "workload/h100_decode_trace.json"
    doc = json.loads(src.read_text())
    one = read_workload(WorkloadReadRequest(path=str(src)))
    big, kernels = bench.replicate(doc, 4 * 405)
    assert kernels == 4 * 405 and bench.replicate(doc, bench.TARGET)[1] == 100_035
    path = tmp_path / "x4.json"
    path.write_text(json.dumps(big))
    four = read_workload(WorkloadReadRequest(path=str(path)))
    assert one.step.steps == 3 and four.step.steps == 12
    assert one.step.launches == 135 and four.step.launches == 135
    assert [k.name for k in four.kernels] == [k.name for k in one.kernels]
    for a, b in zip(one.kernels, four.kernels, strict=True):
        assert b.launches_per_step * 12 == a.launches_per_step * 3 * 4  # calls scale exactly
        assert b.per_step_us == a.per_step_us * 4
        assert b.us_per_step == pytest.approx(a.us_per_step, rel=1e-12)
        assert b.launch == a.launch
    assert four.step.kernel_us == pytest.approx(one.step.kernel_us, rel=1e-12)


def _write() -> None:
    GOLDEN.parent.mkdir(exist_ok=True)
    out = {case: _case(rel, opts) for case, rel, opts in CASES}
    GOLDEN.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({len(out)} cases)")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: test_read_golden.py --write")
    _write()
