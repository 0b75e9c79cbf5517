"""`run_workload` end to end with the GPU parts replaced (no GPU here): the capture returns a built trace,
the join and the ncu drill-down return what their modules would; one hot kernel's drill-down fails."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.workload import capture, core, drill, join
from kernelpilot.workload.models import WorkloadRunRequest
from kernelpilot.workload.readers.kineto import read_kineto


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch, built_trace: Path) -> dict:
    seen: dict = {}

    def fake_capture(target, steps, outdir, timeout_s):
        seen["target"] = target
        meta = {
            "gpu": "NVIDIA H100 80GB HBM3",
            "arch": "sm_90",
            "code_objects": ["/x/libtorch_cuda.so"],
            "event_step_median_us": 71.5,
        }
        return capture.Captured(read_kineto(built_trace), built_trace, meta)

    def fake_join(names, objects, arch=None, block_sizes=None, launch_facts=None):
        seen["join"] = (names, objects, arch, block_sizes, launch_facts)
        out = []
        for n in names:
            gemm = n.startswith("sm90")
            out.append(
                join.JoinedKernel(
                    name=n,
                    matched=gemm,
                    how="exact symbol" if gemm else "",
                    symbol="_Z4gemm" if gemm else None,
                    registers=168 if gemm else None,
                    facts="code object" if gemm else None,
                    note="" if gemm else "no symbol with that name",
                )
            )
        return out

    def fake_drill(target, hot, gpu=None, progress=None, raw_csv=None):
        seen["drill"] = (target, hot, gpu)
        return [
            drill.DrillResult(
                name=h.name,
                ok=True,
                duration_us=20.0,
                bound="memory_bound",
                roof="memory",
                attainable_us=5.0,
                pct_of_attainable=25.0,
            )
            if i == 0
            else drill.DrillResult(name=h.name, ok=False, error=f"{h.name}: ncu could not replay it")
            for i, h in enumerate(hot)
        ]

    monkeypatch.setattr(capture, "capture_closure", fake_capture)
    monkeypatch.setattr(join, "join_names", fake_join)
    monkeypatch.setattr(drill, "drill_hot", fake_drill)
    return seen


def test_run_joins_drills_and_computes_headroom(fake_gpu: dict, tmp_path: Path):
    out = tmp_path / "r.json"
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make", hot_share=0.9, out=str(out)))
    _names, objects, arch, blocks, _facts = fake_gpu["join"]
    assert (
        arch == "sm_90"
        and objects == [Path("/x/libtorch_cuda.so")]
        and blocks == {"sm90_xmma_gemm_bf16": 128}
    )
    target, hot, gpu = fake_gpu["drill"]
    assert target.spec == "step.py:make" and target.warmup_steps == 5 and gpu == "NVIDIA H100 80GB HBM3"
    assert hot[0].symbol == "_Z4gemm" and hot[0].launches_per_step == 1.0
    gemm = res.kernels[0]
    assert gemm.isa and gemm.isa["registers"] == 168 and gemm.drill and gemm.drill["bound"] == "memory_bound"
    assert "profile" not in gemm.drill
    # the gap to the next step is the step's own (workload/idle.py): launch overhead ranks first
    assert res.opportunities[0].kind == "launch_overhead"
    top = next(o for o in res.opportunities if o.kind == "headroom")
    assert top.saving_us_per_step == 15.0  # 20 µs × (1 − 0.25)
    assert "20.0 µs/step × (1 − 0.25 achieved/attainable)" in top.formula
    # the capture's trace was temporary: isolating the row needs one kept with --save-trace (issue 44)
    assert top.next_command.startswith(
        "run again with --save-trace trace.json, then kernelpilot workload isolate"
    )
    # the failed drill-down keeps the breakdown and names the kernel and why
    assert len(res.kernels) == 3 and res.drill_failures and "ncu could not replay it" in res.drill_failures[0]
    assert res.unmatched and "no symbol with that name" in res.unmatched[0]
    assert res.isa_joined_share == pytest.approx(
        20 / 28
    )  # hot: all three kernels (28 µs) and res.step.event_step_us == 71.5
    assert out.is_file() and res.wall_s is not None


def test_whole_drill_refused_keeps_the_breakdown(fake_gpu: dict, monkeypatch: pytest.MonkeyPatch):
    from kernelpilot.foundation.errors import PermissionDeniedError

    def refused(*_a, **_k):
        raise PermissionDeniedError("ncu was refused access to GPU performance counters", "enable counters")

    monkeypatch.setattr(drill, "drill_hot", refused)
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make"))
    assert len(res.kernels) == 3 and any("refused access" in n for n in res.notes)
    assert all("refused access" in f for f in res.drill_failures)


def test_spec_and_command_are_exclusive():
    with pytest.raises(InvalidArgumentError):
        core.run_workload(WorkloadRunRequest(spec="a.py:f", command=["python3", "x.py"]))
    with pytest.raises(InvalidArgumentError):
        core.run_workload(WorkloadRunRequest())
