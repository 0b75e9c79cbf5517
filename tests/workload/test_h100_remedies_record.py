"""The H100 run of device/workload_remedies_next.sh (fixtures/workload/h100_remedies/, PROVENANCE.md there):
the measured remedies read back into the result model and say what the recorded text says; the acceptance's
90 s holds; the fresh prefill trace, read through the gzip path, gives every idle µs a cause and the
launch-bound idle of the raw events (tests/workload/test_idle.py's independent computation)."""

from __future__ import annotations

import gzip
import re
import statistics
from pathlib import Path

import pytest
from tests.workload.test_idle import _raw_launch_bound

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest, WorkloadResult, remedy_lines

REC = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / "h100_remedies"
_NUM = r"([\d.]+)"


def _decode() -> WorkloadResult:
    return WorkloadResult.model_validate_json((REC / "decode_remedies.json").read_text())


def test_the_remedies_read_back_and_say_what_the_text_says():
    r = _decode()
    text = (REC / "decode_remedies.txt").read_text()
    rep = r.remedies
    assert rep is not None and r.gpu == "NVIDIA H100 80GB HBM3"
    for line in remedy_lines(rep):  # the report's lines, rendered from the JSON, are the recorded text's
        assert line in text.splitlines()
    graph, comp = rep.remedies
    assert graph.name == "cuda_graph" and graph.status == "measured"
    assert graph.outputs_equal is True and graph.tolerance == "bitwise" and graph.max_abs_diff == 0.0
    assert graph.eager and graph.remedy and graph.eager.samples == graph.remedy.samples == 32
    m = re.search(
        rf"cuda_graph: eager {_NUM} µs \[{_NUM}, {_NUM}\] -> {_NUM} µs \[{_NUM}, {_NUM}\], "
        rf"saving {_NUM} µs/step \(estimate {_NUM} µs/step\), ratio {_NUM} \[{_NUM}, {_NUM}\], "
        r"outputs equal \(bitwise\)",
        text,
    )
    assert m, "the cuda_graph line of the recorded text"
    got = [float(x) for x in m.groups()]
    assert got == [1731.3, 1669.1, 1826.7, 406.5, 406.2, 406.8, 1324.7, 1366.0, 0.237, 0.203, 0.242]
    e, g = graph.eager, graph.remedy
    want = [e.median_us, e.ci_low_us, e.ci_high_us, g.median_us, g.ci_low_us, g.ci_high_us]
    want += [graph.saving_us_per_step, rep.estimate_us_per_step]
    assert [round(x or 0.0, 1) for x in want] == got[:8]
    assert [round(x or 0.0, 3) for x in (graph.ratio, graph.ratio_ci_low, graph.ratio_ci_high)] == got[8:]
    assert graph.saving_us_per_step == pytest.approx(e.median_us - g.median_us)
    assert e.ci_low_us <= e.median_us <= e.ci_high_us and g.ci_low_us <= g.median_us <= g.ci_high_us
    assert graph.ratio_ci_low <= graph.ratio <= graph.ratio_ci_high < 1  # type: ignore[operator]
    # the estimate is the launch-overhead opportunity's (the top one); the graph measured 97.0 % of it
    assert r.opportunities[0].kind == "launch_overhead"
    assert rep.estimate_us_per_step == r.opportunities[0].saving_us_per_step
    assert graph.saving_us_per_step / rep.estimate_us_per_step == pytest.approx(0.970, abs=0.001)  # type: ignore[operator]
    # torch.compile did not apply on that run; its reason was cut to the first line then (remedies_child's
    # failure_reason now keeps the innermost cause): recorded as measured
    assert comp.name == "torch_compile_reduce_overhead" and comp.status == "not_applicable"
    assert comp.why == "BackendCompilerFailed: backend='inductor' raised:"
    assert "torch_compile_reduce_overhead: not applicable: BackendCompilerFailed" in text


def test_the_whole_command_stayed_within_90_s():
    log = (REC / "steps.log").read_text()
    m = re.search(r"decode --try-remedies rc=(\d+) wall=([\d.]+) s \(acceptance: <= 90 s\)", log)
    assert m and m.group(1) == "0"
    wall = float(m.group(2))
    assert wall == 35.0 and wall <= 90
    r = _decode()
    assert r.wall_s is not None and r.remedies is not None and r.remedies.wall_s is not None
    assert (
        r.remedies.wall_s < r.wall_s <= wall
    )  # the remedies child inside the run, the run inside the command
    assert f"run wall time {r.wall_s:.1f} s" in (REC / "decode_remedies.txt").read_text()
    assert "torch/gpu: 2.11.0+cu130 NVIDIA H100 80GB HBM3" in log


@pytest.fixture(scope="module")
def prefill() -> WorkloadResult:
    return read_workload(WorkloadReadRequest(path=str(REC / "prefill_trace.json.gz")))


def test_the_gzip_prefill_trace_gives_every_idle_microsecond_a_cause(prefill: WorkloadResult):
    s = prefill.step
    assert (REC / "prefill_trace.json.gz").read_bytes()[:2] == b"\x1f\x8b"
    mean_idle = sum(s.per_step_idle_us) / len(s.per_step_idle_us)
    assert sum(c.us_per_step for c in s.idle_causes) == pytest.approx(mean_idle, rel=1e-9)
    for k in range(len(s.per_step_idle_us)):
        assert sum(c.per_step_us[k] for c in s.idle_causes) == pytest.approx(s.per_step_idle_us[k], rel=1e-9)
    share = {c.cause: c.share_of_idle for c in s.idle_causes}
    assert share["unexplained"] <= 0.05
    assert share["launch_bound"] == pytest.approx(0.97, abs=0.005) and share["cpu_op"] == pytest.approx(
        0.03, abs=0.005
    )


def test_the_gzip_prefill_trace_launch_bound_equals_the_raw_events(prefill: WorkloadResult, tmp_path: Path):
    plain = tmp_path / "prefill_trace.json"
    plain.write_bytes(gzip.decompress((REC / "prefill_trace.json.gz").read_bytes()))
    bound, idle = _raw_launch_bound(plain)
    s = prefill.step
    assert s.idle_steps == len(bound) == 4  # 5 captured steps, the last has no following gap
    assert s.launch_bound_gap_us == pytest.approx(statistics.median(bound), rel=0.005)
    assert s.per_step_idle_us == pytest.approx(idle, rel=1e-9)
    lb = next(c for c in s.idle_causes if c.cause == "launch_bound")
    assert lb.per_step_us == pytest.approx(bound, rel=0.005)


def test_the_recorded_prefill_read_is_what_the_gzip_reads(prefill: WorkloadResult):
    text = (REC / "prefill_read.txt").read_text()
    m = re.search(rf"wall {_NUM} µs · busy {_NUM} µs · idle {_NUM} µs \(launch-bound {_NUM} µs\)", text)
    assert m, "the step line of the recorded read"
    s = prefill.step
    assert [float(x) for x in m.groups()] == [
        round(x or 0.0, 1) for x in (s.wall_us, s.busy_us, s.idle_us, s.launch_bound_gap_us)
    ]
    assert [float(x) for x in m.groups()] == [11331.3, 913.1, 10418.2, 10093.8]
    assert "unexplained 0.0 (0%)" in text and prefill.gpu == "NVIDIA H100 80GB HBM3"


def test_the_read_bench_figure_is_the_median_of_its_runs():
    log = (REC / "read_bench.log").read_text()
    assert "kernels=100035" in log
    runs = [float(x) for x in re.search(r"cpu_s=\[([^\]]+)\]", log).group(1).split(",")]  # type: ignore[union-attr]
    m = re.search(r"figure=([\d.]+) s \(median of 3, spread ([\d.]+)-([\d.]+) s\)", log)
    assert m and float(m.group(1)) == statistics.median(runs) == 2.27
    assert (float(m.group(2)), float(m.group(3))) == (min(runs), max(runs))
