"""The final report states the stop verdict, and the HTML roofline of a vector-unit op draws the roof the
analysis used (the bf16 vector peak, not the tensor-core peak) — issue 27 items 1 and 5. Bundled wiki (H100
has a measured copy ceiling); the trial's SwiGLU shape and its two measured times."""

from __future__ import annotations

import json
from pathlib import Path

from kernelpilot.workspace.hardware import gather

KERNEL = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "vector_add.cu"
SWIGLU = {"op": "elementwise", "numel": 8192 * 14336, "inputs": 2, "outputs": 1}


def test_chart_peaks_are_the_roofline_peaks_for_a_vector_op() -> None:
    hw = gather("H100", dtype="bf16", roofline_args=SWIGLU)
    assert hw.peak_compute is not None and hw.peak_compute.metric == "bf16_vector_tflops"
    assert hw.peak_bandwidth is not None and hw.peak_bandwidth.metric == "memory_bandwidth_tb_s"
    gemm = gather("H100", dtype="bf16", roofline_args={"op": "gemm", "m": 4096, "n": 4096, "k": 4096})
    assert gemm.peak_compute is not None and gemm.peak_compute.metric == "bf16_dense_tflops"
    timed = gather("H100", dtype="bf16", roofline_args=SWIGLU, measured_time_us=236.1)
    assert timed.stop_status == "MET" and timed.stop_verdict and "stop_or_fuse" in timed.stop_verdict


def test_final_report_states_the_stop_verdict(tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "root"
    r = run_cli(
        "workspace", "init", "swiglu", "--kernel", str(KERNEL), "--platform", "H100",
        "--framework", "triton", "--dtype", "bf16", "--shape", "T=8192,H=14336",
        "--roofline-args", json.dumps(SWIGLU), "--root", str(root),
    )  # fmt: skip
    assert r.code == 0, r.err
    ws = root / "swiglu"
    for change, med in (("baseline BLOCK=64", "1106"), ("BLOCK 64 -> 1024", "236.1")):
        r = run_cli("memory", "create", "--workspace", str(ws), "--change", change, "--median", med)
        assert r.code == 0, r.err
    r = run_cli("--json", "report", "--workspace", str(ws))
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    assert rep["audit"] == "passed"
    md = (ws / rep["markdown"]).read_text()
    assert "**Stop verdict (v1): MET** — stop verdict MET: memory-bound, measured 236.1 µs ≤ target" in md
    assert "shown beside, not used" in md
    html = (ws / rep["html"]).read_text()
    assert "Stop verdict (v1): MET</strong>" in html
    assert "roof: bf16_vector_tflops: 133.8 TFLOP/s" in html and "roof: bf16_dense_tflops" not in html
