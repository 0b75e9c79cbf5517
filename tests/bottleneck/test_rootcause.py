"""Root-cause rules on real H100 captures of kernels with known causes (tests/fixtures/profile/rootcause).

End to end: the right rule fires first with its measured quantity (checked against the CSV cells), and the
top lever of `suggest` is the one a kernel engineer would try first. Per rule: a firing and a non-firing
real capture.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kernelpilot.bottleneck.classify import classify_bottleneck, memory_stop
from kernelpilot.bottleneck.isa_facts import normalize
from kernelpilot.bottleneck.models import BottleneckVerdict, ClassifyRequest
from kernelpilot.bottleneck.rules import RULES, Ctx
from kernelpilot.bottleneck.rules.base import Clear, Finding
from kernelpilot.bottleneck.rules.issue import RULES as ISSUE_RULES
from kernelpilot.profile.core import profile_parse
from kernelpilot.profile.models import ProfileParseRequest
from kernelpilot.suggest.core import suggest_experiments
from kernelpilot.suggest.models import SuggestRequest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "rootcause"

# kernel -> (first rule, expert's first lever)
EXPECTED = {
    "copy_f4": ("dram_at_roof", "stop_or_fuse"),
    "transpose_naive_st": ("uncoalesced_global_access", "coalesce_access"),
    "transpose_naive_ld": ("uncoalesced_global_access", "coalesce_access"),
    "transpose_smem_nopad": ("shared_bank_conflicts", "fix_bank_conflicts"),
    "local_dyn": ("local_memory", "registerize_local_array"),
    "spill_regs": ("local_memory", "remove_spills"),
    "sgemm_naive": ("no_operand_reuse", "reuse_on_chip"),
    "sgemm_tiled": ("no_operand_reuse", "register_tiling"),
    "sgemm_regtile": ("pipe_saturation", "tensor_cores"),
    "tail_fma": ("tail_effect", "launch_config"),
    "tiny_axpy": ("launch_overhead", "fuse_kernels"),
    "dep_chain_lowocc": ("few_waves", "launch_config"),
    "copy_smem_limited": ("occupancy_limiter", "raise_occupancy"),
    "xu_heavy": ("pipe_saturation", "cheaper_instructions"),
    "l2_reread": ("l2_reuse", "reuse_on_chip"),
}


def cells(kernel: str) -> dict[str, float]:
    rows = [r for r in csv.reader((FIX / "full" / f"{kernel}_raw.csv").open()) if len(r) > 10]
    out = {}
    for k, v in zip(rows[0], rows[2], strict=True):
        if v.replace(",", "").replace(".", "", 1).isdigit():
            out[k] = float(v.replace(",", ""))
    return out


def isa_json(kernel: str) -> str:
    return (FIX / "isa" / f"fit_{kernel}.json").read_text()


def verdict(kernel: str, mode: str = "full", isa: bool = True) -> BottleneckVerdict:
    path = FIX / "full" / f"{kernel}_raw.csv" if mode == "full" else FIX / "roofline" / f"{kernel}.csv"
    req = ClassifyRequest(profile_path=str(path), isa_facts_json=isa_json(kernel) if isa else None)
    (v,) = classify_bottleneck(req).verdicts
    return v


def top_levers(v: BottleneckVerdict) -> list[str]:
    doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
    res = suggest_experiments(SuggestRequest(bottleneck=doc))
    return [s.lever for s in res.suggestions]


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_full_set_first_rule_and_top_lever(kernel: str) -> None:
    rule, lever = EXPECTED[kernel]
    v = verdict(kernel)
    assert v.causes and v.causes[0].rule == rule, [c.rule for c in v.causes]
    c = v.causes[0]
    assert c.gain_pct is not None and c.gain_formula and c.source.startswith("http")
    assert str(FIX) in c.evidence[0].source or c.evidence[0].source.startswith("kernelpilot isa")
    assert top_levers(v)[0] == lever
    gains = [x.gain_pct for x in v.causes if x.gain_pct is not None and x.gain_pct >= 5]
    assert gains == sorted(gains, reverse=True)


def test_quantities_equal_the_capture() -> None:
    st = cells("transpose_naive_st")
    sect = st["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
    total = sect + st["l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"]
    excess = sect * (1 - st["smsp__sass_average_data_bytes_per_sector_mem_global_op_st.ratio"] / 32)
    c = verdict("transpose_naive_st").causes[0]
    assert c.value == pytest.approx(100 * excess / total, rel=1e-3)
    assert "stores use 4.0 of 32 bytes per sector" in c.quantity
    # ncu's own count of excessive sectors agrees within 0.1%
    assert excess == pytest.approx(st["derived__memory_l2_theoretical_sectors_global_excessive"], rel=1e-3)
    nop = cells("transpose_smem_nopad")
    c = verdict("transpose_smem_nopad").causes[0]
    ways = nop["memory_l1_wavefronts_shared"] / nop["memory_l1_wavefronts_shared_ideal"]
    assert c.value == pytest.approx(ways, rel=1e-3) and c.unit == "ways" and ways > 16
    tail = verdict("tail_fma").causes[0]
    assert tail.value == pytest.approx(1.20) and tail.gain_pct == pytest.approx(40.0)
    loc = verdict("local_dyn").causes[0]
    assert "no spills" in loc.quantity and "stack frame 256 B" in loc.quantity
    spill = verdict("spill_regs").causes[0]
    assert "register spills" in spill.quantity
    naive = verdict("sgemm_naive").causes[0]
    assert naive.value == pytest.approx(1.0, abs=0.01)  # one FMA (2 FLOP) per 2 loaded values
    occ = verdict("copy_smem_limited").causes[0]
    assert "shared memory" in occ.quantity and occ.value == pytest.approx(6.25, abs=0.01)


def test_roofline_kernels_get_nothing_above_stop() -> None:
    v = verdict("copy_f4")
    assert v.stop is not None and v.stop.status == "MET" and v.stop.ceiling.measured
    assert top_levers(v)[0] == "stop_or_fuse"
    # 88% of the measured copy ceiling is below the 90% target: NOT MET, so no stop_or_fuse; its 32-bit
    # loads get vectorization with the gain left to the ceiling (it was `stop_or_fuse` under ncu's 80% rule)
    pad = verdict("transpose_smem_pad")
    assert pad.stop is not None and pad.stop.status == "NOT MET" and 85 < (pad.stop.pct_of_ceiling or 0) < 90
    levers = top_levers(pad)
    assert levers[0] == "vectorize_loads" and "stop_or_fuse" not in levers
    (narrow,) = [c for c in pad.causes if c.rule == "narrow_global_loads"]
    assert narrow.gain_pct == pytest.approx(100 - pad.stop.pct_of_ceiling, abs=0.1)
    res = suggest_experiments(
        SuggestRequest(bottleneck=json.dumps({"verdicts": [verdict("copy_f4").model_dump(mode="json")]}))
    )
    assert "at the roofline — stop or fuse" in res.suggestions[0].evidence


def test_contradicted_levers_never_appear() -> None:
    for kernel in ("sgemm_naive", "sgemm_tiled", "transpose_smem_pad", "copy_f4", "local_reg"):
        v = verdict(kernel)
        assert any(r.startswith("shared_bank_conflicts:") for r in v.ruled_out)
        assert "fix_bank_conflicts" not in top_levers(v)
    assert "coalesce_access" not in top_levers(verdict("transpose_smem_nopad"))
    assert "registerize_local_array" not in top_levers(verdict("local_reg"))


ROOFLINE_EXPECTED = {
    "copy_f4": ("dram_at_roof", "stop_or_fuse"),
    "tail_fma": ("tail_effect", "launch_config"),
    "tiny_axpy": ("launch_overhead", "fuse_kernels"),
    "dep_chain_lowocc": ("few_waves", "launch_config"),
    "local_dyn": ("local_memory", "registerize_local_array"),  # from the ISA stack frame
    "spill_regs": ("local_memory", "remove_spills"),  # from the ISA spill bytes
    "copy_smem_limited": ("isa_occupancy_limit", "raise_occupancy"),
}


@pytest.mark.parametrize("kernel", sorted(ROOFLINE_EXPECTED))
def test_roofline_mode_with_isa_facts(kernel: str) -> None:
    rule, lever = ROOFLINE_EXPECTED[kernel]
    v = verdict(kernel, mode="roofline")
    assert v.causes[0].rule == rule, [c.rule for c in v.causes]
    assert top_levers(v)[0] == lever


def test_roofline_mode_says_when_the_full_set_is_needed() -> None:
    for kernel in ("transpose_naive_st", "transpose_smem_nopad", "sgemm_naive"):
        v = verdict(kernel, mode="roofline")
        assert not [c for c in v.causes if c.gain_pct is not None and c.gain_pct >= 5]
        assert any("--mode full" in m for m in v.next_measurements)


def test_text_views_fit_2000_chars() -> None:
    for kernel in sorted(EXPECTED):
        for mode in ("full", "roofline"):
            p = FIX / "full" / f"{kernel}_raw.csv" if mode == "full" else FIX / "roofline" / f"{kernel}.csv"
            res = classify_bottleneck(ClassifyRequest(profile_path=str(p), isa_facts_json=isa_json(kernel)))
            sg = suggest_experiments(SuggestRequest(bottleneck=res.model_dump_json()))
            assert len(res.render_text()) + len(sg.render_text()) <= 2000, (kernel, mode)


# rule -> (firing capture, non-firing capture); ISA facts from `isa fit` on the same cubin.
RULE_CASES = {
    "uncoalesced_global_access": ("transpose_naive_st", "transpose_smem_pad"),
    "local_memory": ("local_dyn", "local_reg"),
    "shared_bank_conflicts": ("transpose_smem_nopad", "transpose_smem_pad"),
    "dram_at_roof": ("copy_f4", "transpose_naive_st"),
    "no_operand_reuse": ("sgemm_naive", "sgemm_regtile"),
    "launch_overhead": ("tiny_axpy", "copy_f4"),
    "few_waves": ("dep_chain_lowocc", "copy_f4"),
    "tail_effect": ("tail_fma", "local_dyn"),
    "occupancy_limiter": ("copy_smem_limited", "sgemm_regtile"),
    "low_eligible_warps": ("local_dyn", "xu_heavy"),
    "pipe_saturation": ("xu_heavy", "copy_f4"),
    "barrier_stalls": ("transpose_smem_pad", "copy_f4"),
    "narrow_global_loads": ("transpose_smem_pad", "copy_f4"),
    "isa_occupancy_limit": ("sgemm_regtile", "sgemm_naive"),
    "l2_reuse": ("l2_reread", "copy_f4"),
}


def ctx(kernel: str) -> Ctx:
    path = FIX / "full" / f"{kernel}_raw.csv"
    (p,) = profile_parse(ProfileParseRequest(path=str(path), include_raw_metrics=True)).kernels
    isa = normalize(json.loads(isa_json(kernel)), kernel)
    return Ctx(p=p, where=str(path), isa=isa, stop=memory_stop(p, [], []))


def test_every_rule_has_a_real_case() -> None:
    # the issue-side rules have their cases in test_issue_causes.py (some on tests/fixtures/profile/ncu)
    issue_side = {r.name for r in ISSUE_RULES}
    assert {r.name for r in RULES} - issue_side == set(RULE_CASES)


@pytest.mark.parametrize("rule", sorted(RULE_CASES))
def test_rule_fires_and_clears_on_real_captures(rule: str) -> None:
    (r,) = [x for x in RULES if x.name == rule]
    fire, clear = RULE_CASES[rule]
    got = r.check(ctx(fire))
    assert isinstance(got, Finding), (rule, fire, got)
    assert got.levers and got.gain_formula and got.evidence
    assert r.reads and r.source and "http" in r.source
    assert isinstance(r.check(ctx(clear)), Clear), (rule, clear)


def test_isa_facts_from_isa_fit_json() -> None:
    f = normalize(json.loads(isa_json("spill_regs")), "spill_regs")
    assert f["spill_store_bytes"] == 404 and f["spill_load_bytes"] == 428 and f["stack_frame_bytes"] == 280
    assert f["widest_load_bits"] == 32 and f["tensor_ops"] == 0 and f["registers"] == 32
    g = normalize(json.loads(isa_json("sgemm_regtile")), "sgemm_regtile")
    assert g["occupancy_limiter"] == "registers" and g["occupancy_pct"] == 25.0
    assert g["widest_load_bits"] == 128


def test_isa_facts_from_resources_merged_and_amd() -> None:
    res = json.loads((FIX / "isa" / "resources_spill_regs.json").read_text())
    f = normalize(res, "spill_regs")
    assert (f["stack_frame_bytes"], f["spill_store_bytes"], f["registers"]) == (280, 404, 32)
    both = normalize([res, json.loads(isa_json("spill_regs"))], "spill_regs")
    assert both["widest_load_bits"] == 32 and both["spill_load_bytes"] == 428
    # AMD: `isa fit` on the repo's real gfx942 spill fixture (clang 19)
    from kernelpilot.isa.api import IsaFitRequest
    from kernelpilot.isa.core import isa_fit

    amd = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "amd" / "spill.gfx942.hsaco"
    fit = isa_fit(IsaFitRequest(file=str(amd), disassemble=False)).model_dump(mode="json")
    g = normalize(fit, "vgpr_spill")
    assert (g["vgpr_spills"], g["stack_frame_bytes"], g["registers"]) == (195, 392, 64)
    (r,) = [x for x in RULES if x.name == "local_memory"]
    path = FIX / "roofline" / "copy_f4.csv"  # roofline mode: no local-memory metrics, so the ISA speaks
    (p,) = profile_parse(ProfileParseRequest(path=str(path), include_raw_metrics=True)).kernels
    out = r.check(Ctx(p=p, where=str(path), isa=g))
    assert isinstance(out, Finding) and "register spills" in out.quantity and out.gain_pct is None
    assert out.levers[0] == "remove_spills"


def test_history_down_ranks_a_failed_lever() -> None:
    v = verdict("sgemm_naive")
    doc = json.dumps({"verdicts": [v.model_dump(mode="json")]})
    hist = json.dumps([{"kernel": "sgemm_naive", "lever": "reuse_on_chip", "status": "regressed"}])
    res = suggest_experiments(SuggestRequest(bottleneck=doc, history=hist))
    by = {s.lever: s for s in res.suggestions}
    assert res.suggestions[0].lever == "register_tiling"
    assert by["reuse_on_chip"].score == pytest.approx(v.causes[0].gain_pct / 100 * 0.35, abs=1e-3)
    assert "tried 1x" in by["reuse_on_chip"].history_note
