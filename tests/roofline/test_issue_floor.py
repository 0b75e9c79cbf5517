"""The instruction-issue floor (roofline.issue): cited rates, static counts from a real cubin, measured counts
from a real ncu raw page, the top-k op, and the floor binding the stop verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError, UnknownSpecError
from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import RooflineRequest
from kernelpilot.wiki import load_wiki

FIX = Path(__file__).resolve().parents[1] / "fixtures"
CUBIN = FIX / "isa" / "nvidia" / "kernels.sm_90.cubin"
SOFTMAX_RAW = FIX / "profile" / "ncu" / "softmax_rows_raw.csv"
H100_SM_PER_S = 132 * 1980e6  # sm_count x boost clock of the bundled h100-sxm5 file (checked below)


def test_wiki_holds_cited_issue_rates_for_hopper_and_ampere() -> None:
    wiki = load_wiki()
    for gpu, fp32 in (("h100-sxm5", 128), ("h200-sxm", 128), ("h100-pcie", 128), ("a100-sxm-80gb", 64)):
        assert wiki.lookup(gpu, "warp_schedulers_per_sm").number() == 4
        assert wiki.lookup(gpu, "issue_inst_per_clk_per_scheduler").unit == "inst/clk"
        assert wiki.lookup(gpu, "fp32_results_per_clk_per_sm").number() == fp32
        assert wiki.lookup(gpu, "int32_add_results_per_clk_per_sm").number() == 64
        assert wiki.lookup(gpu, "warp_shuffle_results_per_clk_per_sm").number() == 32
        assert wiki.lookup(gpu, "sfu_results_per_clk_per_sm").number() == 16
    assert wiki.lookup("h100-sxm5", "boost_clock_mhz").number() == 1980
    assert wiki.lookup("h200-sxm", "boost_clock_mhz").number() == 1980
    assert wiki.lookup("h100-sxm5", "sm_count").number() == 132
    # no NVIDIA page states the H100 PCIe boost clock: the line is the clock NVIDIA's FP32 peak implies
    pcie = wiki.lookup("h100-pcie", "boost_clock_mhz")
    assert pcie.number() == pytest.approx(51e6 / (114 * 128 * 2), abs=0.05)  # 51 TFLOP/s / (114 SMs x 256)
    assert pcie.source_text.startswith("derived:")


def test_topk_op_counts_logits_read_and_values_plus_ids_written() -> None:
    r = analyze(
        RooflineRequest(gpu="H100", op="topk", rows=65536, cols=128, k=8, dtype="bf16", out_dtype="fp32")
    )
    assert r.flops == 0
    assert r.bytes == 65536 * 128 * 2 + 65536 * 8 * (4 + 4)
    assert r.bound == "memory" and r.issue == [] and r.issue_time_us is None
    assert any("--isa" in n for n in r.notes)  # no FLOPs: the note points at the issue floor
    with pytest.raises(InvalidArgumentError):
        analyze(RooflineRequest(gpu="H100", op="topk", rows=4, cols=8, k=9))


def test_measured_issue_floor_from_the_full_set_counter() -> None:
    r = analyze(
        RooflineRequest(
            gpu="H100", op="softmax", rows=8192, cols=4096, dtype="fp32", ncu_csv=str(SOFTMAX_RAW)
        )
    )
    (m,) = r.issue
    assert m.source == "measured" and m.binding == "issue"
    want = 51757056 / (4 * H100_SM_PER_S) * 1e6  # smsp__inst_executed.sum / (4 schedulers x 1 inst/clk)
    assert m.time_us == pytest.approx(want, rel=1e-9)
    assert r.issue_time_us == m.time_us
    assert r.bound == "memory" and r.time_floor_us == pytest.approx(r.memory_time_us)  # 80 µs > 49.5 µs
    assert any(
        "issue_inst_per_clk_per_scheduler: 1 inst/clk <- gpu-wiki-index/nvidia/h100-sxm5.md" in c
        for c in r.citations
    )


@pytest.mark.needs_tool("nvdisasm")
def test_static_issue_floor_from_a_cubin_binds_and_sets_the_stop_target() -> None:
    # kp::scale: 16 instructions a warp issues (NOP padding and the closing self-loop left out):
    # IMAD, IMAD.WIDE, FMUL on the fma pipe, ISETP on the alu pipe
    req = RooflineRequest(
        gpu="H100", bytes_moved=1e3, isa=str(CUBIN), isa_kernel="scale", grid=[4096], block=[256]
    )
    r = analyze(req)
    (s,) = r.issue
    warps = 4096 * 8
    assert s.source == "static" and s.lower_bound is None
    by = {p.pipe: p for p in s.pipes}
    assert by["issue"].warp_instructions == 16 * warps
    assert by["fma"].warp_instructions == 3 * warps and by["alu"].warp_instructions == 1 * warps
    assert by["issue"].time_us == pytest.approx(16 * warps / (4 * H100_SM_PER_S) * 1e6)
    assert by["alu"].rate_inst_per_clk_per_sm == 2  # 64 results/clk / warp_size 32
    assert r.bound == "issue" and r.time_floor_us == by["issue"].time_us
    assert r.stop.bound == "issue" and r.stop.ceiling.unit == "Ginst/s"
    assert r.stop.target_time_us == pytest.approx(r.time_floor_us / 0.9)
    assert "boost_clock_mhz: 1980 MHz <- gpu-wiki-index/nvidia/h100-sxm5.md" in r.stop.ceiling.citation
    tripled = analyze(req.model_copy(update={"trip": 3.0}))
    assert tripled.issue_time_us == pytest.approx(3 * by["issue"].time_us)


@pytest.mark.needs_tool("nvdisasm")
def test_loops_make_the_static_floor_a_stated_lower_bound() -> None:
    r = analyze(
        RooflineRequest(
            gpu="H100", bytes_moved=1e3, isa=str(CUBIN), isa_kernel="wmma_gemm", grid=[1], block=[32]
        )
    )
    assert r.issue[0].lower_bound is not None and "lower bound" in r.issue[0].lower_bound
    assert "--trip" in r.issue[0].lower_bound


def test_isa_without_a_launch_is_refused() -> None:
    with pytest.raises(InvalidArgumentError, match="--grid"):
        analyze(RooflineRequest(gpu="H100", bytes_moved=1e3, isa=str(CUBIN), isa_kernel="scale"))


def test_issue_floor_refuses_a_gpu_without_a_cited_clock() -> None:
    # the H20's reported figures are not consistent enough to derive a clock: UNKNOWN, and the floor says so
    with pytest.raises(UnknownSpecError, match="boost_clock_mhz"):
        analyze(RooflineRequest(gpu="h20", op="softmax", rows=8, cols=8, ncu_csv=str(SOFTMAX_RAW)))


@pytest.mark.needs_tool("nvdisasm")
def test_the_issue_floors_composite_citations_pass_the_audit(tmp_path: Path) -> None:
    from kernelpilot.wiki.audit import audit_paths

    r = analyze(
        RooflineRequest(
            gpu="H100", bytes_moved=1e3, isa=str(CUBIN), isa_kernel="scale", grid=[4096], block=[256]
        )
    )
    report = tmp_path / "stop.md"
    report.write_text("\n".join(f"- {s}" for s in r.stop_conditions) + "\n" + r.render_text())
    res = audit_paths([report], load_wiki(), history=False)
    assert res.ok and res.citations_checked >= 8, [p.reason for p in res.problems]
