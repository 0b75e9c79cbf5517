"""The per-step arithmetic on a small hand-built Kineto trace whose answer is known by construction.

Real traces are tested in test_readers.py / test_h100_capture.py; this one pins the definitions (step wall,
busy, idle, launch-bound gaps, graph replays, steps by launch time, ops/modules/ranges around a launch).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.models import WorkloadReadRequest


def _x(cat: str, name: str, ts: float, dur: float, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


def _trace(tmp_path: Path) -> Path:
    ev = []
    corr = 0
    for step in range(2):
        base = step * 100.0
        ev.append(_x("user_annotation", f"kernelpilot.step#{step}", base, 60.0))
        ev.append(_x("user_annotation", "nn.Module: Block", base + 1, 50.0))
        ev.append(_x("user_annotation", "decode", base + 1, 50.0))
        # op 1: a GEMM launched at +2, runs 10..30 (GPU waits on nothing: launch before)
        ev.append(_x("cpu_op", "aten::linear", base + 2, 5.0, **{"External id": 10 + step}))
        corr += 1
        ev.append(_x("cuda_runtime", "cudaLaunchKernel", base + 3, 2.0, correlation=corr))
        ev.append(
            _x(
                "kernel",
                "sm90_xmma_gemm_bf16",
                base + 10,
                20.0,
                correlation=corr,
                **{"External id": 10 + step, "stream": 7, "block": [128, 1, 1]},
            )
        )
        # op 2: an add launched at +40, after the GEMM ended at +30: a launch-bound gap 30..42
        ev.append(_x("cpu_op", "aten::add", base + 39, 5.0, **{"External id": 20 + step}))
        corr += 1
        ev.append(_x("cuda_runtime", "cudaLaunchKernel", base + 40, 2.0, correlation=corr))
        ev.append(
            _x(
                "kernel",
                "vectorized_elementwise_kernel<AddFunctor>",
                base + 42,
                4.0,
                correlation=corr,
                **{"External id": 20 + step, "stream": 7},
            )
        )
        # a graph replay at +45 launching a mul right after the add (no gap)
        corr += 1
        ev.append(_x("cuda_runtime", "cudaGraphLaunch", base + 45, 3.0, correlation=corr))
        ev.append(
            _x(
                "kernel",
                "vectorized_elementwise_kernel<MulFunctor>",
                base + 46,
                4.0,
                correlation=corr,
                **{"stream": 7},
            )
        )
        ev.append(_x("cuda_runtime", "cudaStreamSynchronize", base + 50, 5.0, correlation=900 + step))
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": ev, "deviceProperties": [{"name": "test GPU"}]}))
    return p


def test_step_budget_by_construction(tmp_path: Path):
    r = read_workload(WorkloadReadRequest(path=str(_trace(tmp_path))))
    s = r.step
    assert s.steps == 2
    assert s.per_step_wall_us == [100.0, 40.0]  # step 0: 10 -> 110 (next step's first kernel); last: 10 -> 50
    assert s.busy_us == 28.0 and s.kernel_us == 28.0 and s.launches == 3
    assert s.launch_bound_gap_us == 12.0  # 30 -> 42: the add's launch call began at 40, after the GEMM ended
    assert s.host_wait_us == 5.0
    assert s.launch_call_us == 2.0  # graph replays are not launch calls of one kernel


def test_kernels_carry_op_module_range_phase_and_graph(tmp_path: Path):
    r = read_workload(WorkloadReadRequest(path=str(_trace(tmp_path))))
    gemm, add, mul = r.kernels
    assert gemm.category == "gemm" and gemm.us_per_step == 20.0 and gemm.per_step_us == [20.0, 20.0]
    assert gemm.ops == ["aten::linear"] and gemm.modules == ["Block"] and gemm.ranges == ["decode"]
    assert gemm.phases == ["decode"] and gemm.block == [128, 1, 1]
    assert add.category == "elementwise" and add.ops == ["aten::add"] and not add.graph_launched
    assert mul.graph_launched and mul.launches_per_step == 1.0
    assert gemm.hot and gemm.cumulative_share == pytest.approx(20 / 28)
    assert {(g.level, g.key) for g in r.groups} >= {
        ("category", "gemm"),
        ("op", "aten::linear"),
        ("phase", "decode"),
    }


def test_opportunities_rank_launch_gap_then_fusion_with_formulas(tmp_path: Path):
    r = read_workload(WorkloadReadRequest(path=str(_trace(tmp_path))))
    kinds = [o.kind for o in r.opportunities]
    assert kinds == ["launch_overhead", "fusion"]
    launch, fusion = r.opportunities
    assert launch.saving_us_per_step == 12.0 and "launch-bound idle 12.0" in launch.formula
    assert fusion.saving_us_per_step == 4.0  # add (4) + mul (4) back to back: chain 8 - longest 4
    assert "launches saved 1/step" in fusion.formula


def test_step_wall_median_leaves_out_the_last_steps_span(tmp_path: Path):
    r = read_workload(WorkloadReadRequest(path=str(_trace(tmp_path))))
    assert r.step.wall_us == 100.0 and r.step.idle_us == 72.0
