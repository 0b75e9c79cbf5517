"""Roofline: acceptance cases with targets and citations, UNKNOWN refusal, typed bad input, peak choice,
counting formulas, measured ceilings (spec vs measured), charts, and the CLI."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError, UnknownSpecError
from kernelpilot.roofline import RooflineRequest, analyze, choose_peak_metric, roof_from_peaks
from kernelpilot.roofline.errors import UnknownDtypeError
from kernelpilot.roofline.ops import attention, causal_pairs, gemm, row_op
from kernelpilot.wiki import UNKNOWN_TEXT, BareNumberError, UnitMismatchError, Wiki, load_wiki

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
SMALL = FIX / "gpu-wiki-index"

GEMM = {"op": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
VADD = {"op": "elementwise", "numel": 2**26, "dtype": "fp32", "inputs": 2, "outputs": 1}


def _req(**kw: object) -> RooflineRequest:
    return RooflineRequest.model_validate({"gpu": "H100 SXM5", **kw})


def test_acceptance_gemm_is_compute_bound_with_targets(any_wiki: Wiki) -> None:
    r = analyze(_req(**GEMM), any_wiki)
    bf = any_wiki.lookup("H100", "bf16_dense_tflops")
    bw = any_wiki.lookup("H100", "memory_bandwidth_tb_s")
    assert r.bound == "compute" and r.compute_peak == bf and r.memory_peak == bw
    assert r.flops == 2 * 4096**3 and r.bytes == 3 * 4096 * 4096 * 2
    assert r.arithmetic_intensity == pytest.approx(4096 / 3)
    assert r.ridge_point == pytest.approx(989.4e12 / 3.35e12)
    assert r.time_floor_us == pytest.approx(2 * 4096**3 / 989.4e12 * 1e6)
    spec_target = r.stop.spec_target_time_us if r.stop.spec_ceiling else r.target_time_us
    assert spec_target == pytest.approx(r.time_floor_us / 0.9)  # the spec target, beside or used
    assert r.target_time_us == pytest.approx(r.stop.work / r.stop.ceiling.per_s() / 0.9 * 1e6)
    assert bf.citation() in r.citations and bw.citation() in r.citations
    assert any("890.5 TFLOP/s" in s and bf.citation() in s for s in r.stop_conditions)
    text = r.render_text()
    assert "## Stop Conditions" in text and "COMPUTE-BOUND" in text and bf.citation() in text


def test_acceptance_vector_add_is_memory_bound_with_targets(any_wiki: Wiki) -> None:
    r = analyze(_req(**VADD), any_wiki)
    bw = any_wiki.lookup("H100", "memory_bandwidth_tb_s")
    assert r.bound == "memory" and r.compute_peak.metric == "fp32_vector_tflops"
    assert r.bytes == 2**26 * 12 and r.flops == 2**26
    assert r.time_floor_us == pytest.approx(2**26 * 12 / 3.35e12 * 1e6)
    assert any("3.015 TB/s" in s and bw.citation() in s for s in r.stop_conditions)


def test_acceptance_user_wiki_lacking_metric_fails_with_unknown_named(tmp_path: Path) -> None:
    d = tmp_path / "lab"
    d.mkdir()
    (d / "lab-h100.md").write_text(
        "# lab H100 (gpu_id: lab-h100)\n"
        "- memory_bandwidth_tb_s: 3.35 TB/s | source: NVIDIA H100 datasheet, t, https://n\n"
    )
    wiki = load_wiki([d], include_bundled=False)
    with pytest.raises(UnknownSpecError) as exc:
        analyze(RooflineRequest(gpu="lab-h100", **GEMM), wiki)  # type: ignore[arg-type]
    assert exc.value.message.startswith(UNKNOWN_TEXT) and "bf16_dense_tflops" in exc.value.message
    with pytest.raises(UnknownSpecError) as exc2:
        analyze(RooflineRequest(gpu="lab-h100", **VADD), wiki)  # type: ignore[arg-type]
    assert "fp32_vector_tflops" in exc2.value.message


def test_cli_unknown_named(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "lab"
    d.mkdir()
    (d / "lab-h100.md").write_text(
        "# x (gpu_id: lab-h100)\n- memory_bandwidth_tb_s: 3 TB/s | source: d, t, https://n\n"
    )
    r = run_cli(
        "roofline", "lab-h100", "--op", "gemm", "--m", "4096", "--n", "4096", "--k", "4096", "--wiki", str(d)
    )
    assert r.code != 0 and UNKNOWN_TEXT in r.err and "bf16_dense_tflops" in r.err


def test_bare_floats_and_wrong_units_refused(small_wiki: Wiki) -> None:
    bw = small_wiki.lookup("H100", "memory_bandwidth_tb_s")
    bf = small_wiki.lookup("H100", "bf16_dense_tflops")
    with pytest.raises(BareNumberError):
        roof_from_peaks(1e9, 1e6, 989.4, bw)
    with pytest.raises(BareNumberError):
        roof_from_peaks(1e9, 1e6, bf, 3.35)
    with pytest.raises(UnitMismatchError):
        roof_from_peaks(1e9, 1e6, bw, bf)  # swapped: TB/s as compute peak
    with pytest.raises(UnitMismatchError):
        roof_from_peaks(1e9, 1e6, bf, small_wiki.lookup("H100", "memory_type"))
    assert roof_from_peaks(1e9, 1e6, bf, bw).ridge == pytest.approx(989.4 / 3.35)


@pytest.mark.parametrize(
    "bad",
    [
        {"op": "gemm", "m": 0, "n": 4, "k": 4},
        {"op": "gemm", "m": 4, "n": -1, "k": 4},
        {"op": "gemm", "m": 4, "n": 4},
        {"op": "bmm", "m": 4, "n": 4, "k": 4},
        {"op": "elementwise", "numel": -5},
        {"op": "softmax", "rows": 0, "cols": 10},
        {"op": "attention", "heads": 8, "seq_q": 0, "head_dim": 64},
        {"flops": 1e9},
        {"flops": 1e9, "bytes_moved": 0},
        {"op": "gemm", "m": 4, "n": 4, "k": 4, "target_fraction": 1.5},
        {"op": "gemm", "m": 4, "n": 4, "k": 4, "measured_time_us": -1},
        {"op": "elementwise", "numel": 4, "sparse": True},
    ],
)
def test_bad_shapes_are_typed_errors(small_wiki: Wiki, bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        analyze(_req(**bad), small_wiki)


def test_unknown_dtype_is_typed(small_wiki: Wiki) -> None:
    with pytest.raises(UnknownDtypeError) as exc:
        analyze(_req(op="gemm", m=4, n=4, k=4, dtype="fp13"), small_wiki)
    assert "fp13" in exc.value.message
    with pytest.raises(UnknownDtypeError):
        analyze(_req(op="gemm", m=4, n=4, k=4, out_dtype="q7"), small_wiki)


def test_peak_choice() -> None:
    assert choose_peak_metric("bf16", True, False, False)[0] == "bf16_dense_tflops"
    assert choose_peak_metric("bf16", True, False, True)[0] == "bf16_sparse_tflops"
    assert choose_peak_metric("fp32", True, False, False)[0] == "fp32_vector_tflops"
    assert choose_peak_metric("fp32", True, True, False)[0] == "tf32_dense_tflops"
    assert choose_peak_metric("fp64", True, False, False)[0] == "fp64_matrix_tflops"
    assert choose_peak_metric("fp64", False, False, False)[0] == "fp64_vector_tflops"
    assert choose_peak_metric("int8", True, False, False)[0] == "int8_dense_tops"
    assert choose_peak_metric("fp8", True, False, False)[0] == "fp8_dense_tflops"
    assert choose_peak_metric("bf16", False, False, False)[0] == "fp32_vector_tflops"


def test_fp32_gemm_uses_vector_peak_unless_tf32(small_wiki: Wiki) -> None:
    r = analyze(_req(op="gemm", m=4096, n=4096, k=4096, dtype="fp32"), small_wiki)
    assert r.compute_peak.metric == "fp32_vector_tflops" and "allow-tf32" in r.peak_choice
    r = analyze(_req(op="gemm", m=4096, n=4096, k=4096, dtype="fp32", allow_tf32=True), small_wiki)
    assert r.compute_peak.metric == "tf32_dense_tflops"


def test_int8_uses_tops_and_mi300x(small_wiki: Wiki) -> None:
    r = analyze(RooflineRequest(gpu="MI300X", op="gemm", m=8192, n=8192, k=8192, dtype="int8"), small_wiki)
    assert (
        r.compute_peak.metric == "int8_dense_tops" and r.compute_peak.unit == "TOP/s" and r.bound == "compute"
    )


def test_counting_formulas() -> None:
    g = gemm(2, 3, 4, 5, 2, 4, True)
    assert g.flops == 2 * 5 * 2 * 3 * 4 and g.bytes == 5 * (2 * 4 * 2 + 4 * 3 * 2 + 2 * 3 * 4 * 2)
    assert row_op("softmax", 10, 100, None, 2, 2).flops == 5000
    assert row_op("layernorm", 10, 100, None, 2, 2).bytes == 10 * 100 * 4 + 2 * 100 * 2
    assert row_op("rmsnorm", 10, 100, None, 4, 4).bytes == 10 * 100 * 8 + 100 * 4
    assert row_op("reduction", None, None, 1000, 4, 4).bytes == 1000 * 4 + 4
    assert causal_pairs(4, 4) == 10  # 1+2+3+4
    assert causal_pairs(2, 4) == 3 + 4  # bottom-right aligned
    assert causal_pairs(4, 2) == 3  # first two query rows see nothing
    full = attention(2, 8, None, 1024, None, 64, False, 2, 2)
    causal = attention(2, 8, None, 1024, None, 64, True, 2, 2)
    assert full.flops == 4 * 2 * 8 * 1024 * 1024 * 64
    assert causal.flops == pytest.approx(full.flops * (1025 / 2048))
    gqa = attention(1, 32, 8, 128, 4096, 128, False, 2, 2)
    assert gqa.bytes == 32 * 128 * 128 * 4 + 2 * 8 * 4096 * 128 * 2


def test_attention_and_norm_ops_classify(small_wiki: Wiki) -> None:
    a = analyze(
        _req(op="attention", batch=4, heads=32, seq_q=4096, head_dim=128, causal=True, dtype="bf16"),
        small_wiki,
    )
    assert a.bound == "compute" and a.compute_peak.metric == "bf16_dense_tflops"
    assert any("softmax" in n for n in a.notes)
    n = analyze(_req(op="rmsnorm", rows=8192, cols=4096, dtype="bf16"), small_wiki)
    assert n.bound == "memory"


def test_direct_flops_bytes_and_achieved(small_wiki: Wiki) -> None:
    r = analyze(
        _req(flops=1e12, bytes_moved=1e9, dtype="bf16", unit="tensor", measured_time_us=2000), small_wiki
    )
    assert r.compute_peak.metric == "bf16_dense_tflops" and r.bound == "compute"
    assert r.achieved is not None
    assert r.achieved.tflops == pytest.approx(500.0)
    assert r.achieved.pct_of_compute_peak == pytest.approx(100 * 500 / 989.4)
    assert r.achieved.pct_of_roofline == pytest.approx(100 * (1e12 / 989.4e12) / 2e-3)


def test_measured_ceilings_spec_vs_measured(small_wiki: Wiki, measured_dir: Path) -> None:
    wiki = load_wiki([SMALL, measured_dir], include_bundled=False)
    r = analyze(_req(**GEMM), wiki)
    comp = {c.measured.metric: c for c in r.comparisons}
    mm = comp["measured_bf16_matmul_tflops"]
    assert mm.spec.metric == "bf16_dense_tflops" and mm.ratio == pytest.approx(mm.measured.number() / 989.4)
    cp = comp["measured_copy_bandwidth_tb_s"]
    assert cp.ratio == pytest.approx(cp.measured.number() / 3.35)
    assert 0.5 < cp.ratio < 1.0 and 0.5 < mm.ratio < 1.0
    assert "spec vs measured" in r.render_text() and mm.measured.citation() in r.citations
    assert r.stop.ceiling.metric == "measured_bf16_matmul_tflops" and r.stop.spec_ceiling is not None
    assert any(s.startswith("spec target, shown beside and not used") for s in r.stop_conditions)
    m = analyze(_req(**GEMM, basis="measured"), wiki)
    assert m.compute_peak.measured and m.memory_peak.metric == "measured_copy_bandwidth_tb_s"
    assert m.time_floor_us > r.time_floor_us
    with pytest.raises(UnknownSpecError):
        analyze(_req(**GEMM, basis="measured"), small_wiki)


def test_charts_and_svg_file(small_wiki: Wiki, tmp_path: Path) -> None:
    out = tmp_path / "roof.svg"
    r = analyze(_req(**GEMM, svg=str(out), measured_time_us=200), small_wiki)
    assert out.read_text() == r.svg and r.svg.startswith("<svg") and r.svg.rstrip().endswith("</svg>")
    assert "bf16_dense_tflops: 989.4 TFLOP/s &lt;- gpu-wiki-index/nvidia/h100-sxm5.md" in r.svg
    assert "X" in r.ascii_chart or "o" in r.ascii_chart
    assert "+" in r.ascii_chart and "ridge" in r.ascii_chart
    import xml.dom.minidom

    xml.dom.minidom.parseString(r.svg)  # well-formed
    assert not math.isnan(r.arithmetic_intensity)


def test_cli_roofline_writes_svg(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    d = tmp_path / "lab"
    d.mkdir()
    (d / "acme-z.md").write_text(
        "# z\n- memory_bandwidth_tb_s: 2 TB/s | source: d, t, https://n\n"
        "- fp32_vector_tflops: 20 TFLOP/s | source: d, t, https://n\n"
    )
    svg = tmp_path / "c.svg"
    r = run_cli(
        "roofline",
        "acme-z",
        "--op",
        "elementwise",
        "--numel",
        "1000000",
        "--dtype",
        "fp32",
        "--wiki",
        str(d),
        "--svg",
        str(svg),
    )
    assert r.code == 0 and "MEMORY-BOUND" in r.out and svg.read_text().startswith("<svg")
    assert "memory_bandwidth_tb_s: 2 TB/s <- lab/acme-z.md:L2" in r.out
