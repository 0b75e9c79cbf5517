"""Roofline on every Radeon and GeForce card in the bundled wiki (issue 26): a bf16 GEMM and an elementwise op
run through the roofline core, and every peak used is a cited wiki line (no estimate, no UNKNOWN refusal)."""

from __future__ import annotations

import pytest

from kernelpilot.roofline import RooflineRequest, analyze
from kernelpilot.wiki import Wiki, load_wiki

WIKI: Wiki = load_wiki()
CONSUMER = sorted(
    gid
    for gid, g in WIKI.gpus.items()
    if any(word in " ".join([g.name, *g.aliases]) for word in ("Radeon", "GeForce"))
)

GEMM = {"op": "gemm", "m": 4096, "n": 4096, "k": 4096, "dtype": "bf16"}
EWISE = {"op": "elementwise", "numel": 2**26, "dtype": "fp32", "inputs": 2, "outputs": 1}


def test_the_consumer_set_covers_the_cards_issue_26_names() -> None:
    wanted = {
        "rx-5700-xt", "rx-6800-xt", "rx-6900-xt", "rx-7600", "rx-7800-xt", "rx-7900-xtx", "rx-9060-xt",
        "rx-9070-xt", "radeon-8060s", "radeon-pro-w7900",
        "rtx-3090", "rtx-4070", "rtx-4080", "rtx-4090", "rtx-5080", "rtx-5090",
    }  # fmt: skip
    assert wanted <= set(CONSUMER)


def _cited(wiki: Wiki, gpu_id: str, citation: str) -> None:
    path = WIKI.gpus[gpu_id].file
    assert f"<- gpu-wiki-index/{path}:L" in citation or f"{path}:L" in citation, citation


@pytest.mark.parametrize("gpu_id", CONSUMER)
def test_bf16_gemm_roofline_on_every_consumer_card(gpu_id: str) -> None:
    r = analyze(RooflineRequest.model_validate({"gpu": gpu_id, **GEMM}), WIKI)
    bf16 = WIKI.get(gpu_id, "bf16_dense_tflops")
    bw = WIKI.get(gpu_id, "memory_bandwidth_tb_s")
    assert bf16 is not None and bw is not None
    assert r.gpu_id == gpu_id and r.compute_peak == bf16 and r.memory_peak == bw
    assert r.ridge_point == pytest.approx(bf16.number() * 1e12 / (bw.number() * 1e12))
    assert r.ridge_point > 1
    # a 4096^3 bf16 GEMM has intensity 4096/3 ~ 1365 FLOP/byte, above every card's ridge point
    assert r.arithmetic_intensity == pytest.approx(4096 / 3)
    assert r.bound == "compute"
    assert r.time_floor_us == pytest.approx(2 * 4096**3 / (bf16.number() * 1e12) * 1e6)
    for cv in (r.compute_peak, r.memory_peak):
        assert cv.citation() in r.citations
        _cited(WIKI, gpu_id, cv.citation())


@pytest.mark.parametrize("gpu_id", CONSUMER)
def test_elementwise_roofline_on_every_consumer_card(gpu_id: str) -> None:
    r = analyze(RooflineRequest.model_validate({"gpu": gpu_id, **EWISE}), WIKI)
    bw = WIKI.get(gpu_id, "memory_bandwidth_tb_s")
    assert bw is not None and r.memory_peak == bw
    assert r.compute_peak.metric == "fp32_vector_tflops"
    assert r.bytes == 2**26 * 12 and r.flops == 2**26
    assert r.ridge_point == pytest.approx(r.compute_peak.number() / bw.number())
    assert r.bound == "memory"
    assert r.time_floor_us == pytest.approx(2**26 * 12 / (bw.number() * 1e12) * 1e6)
    for cv in (r.compute_peak, r.memory_peak):
        assert cv.citation() in r.citations
        _cited(WIKI, gpu_id, cv.citation())
