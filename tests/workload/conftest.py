"""Shared fixtures of the workload tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _x(cat: str, name: str, ts: float, dur: float, **args: object) -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}


@pytest.fixture
def built_trace(tmp_path: Path) -> Path:
    """A two-step Kineto trace built by hand whose breakdown is known by construction (test_breakdown.py)."""
    ev = []
    corr = 0
    for step in range(2):
        base = step * 100.0
        ev.append(_x("user_annotation", f"kernelpilot.step#{step}", base, 60.0))
        ev.append(_x("user_annotation", "nn.Module: Block", base + 1, 50.0))
        ev.append(_x("user_annotation", "decode", base + 1, 50.0))
        # op 1: a GEMM launched at +2, runs 10..30 (GPU waits on nothing: launch before)
        ev.append(
            _x(
                "cpu_op",
                "aten::linear",
                base + 2,
                5.0,
                **{"External id": 10 + step, "Input Dims": [[8, 1, 1024], [3072, 1024]]},
            )
        )
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
