"""AMD ATT findings on small hand-made code.json tables (rules the two real captures do not trigger)."""

from __future__ import annotations

import json
from pathlib import Path

from kernelpilot.profile.att.analysis import profile_att
from kernelpilot.profile.att.models import AttRequest

HEADER = "ISA, _, LineNumber, Source, Codeobj, Vaddr, Hit, Latency, Stall, Idle"


def folder(tmp: Path, rows: list[tuple[str, int, int]]) -> Path:
    """A minimal dispatch folder: code.json only; rows are (isa, latency, stall)."""
    d = tmp / "ui_output_agent_7_dispatch_1"
    d.mkdir()
    code = [["; k", 0, 0, "", 1, 0, 0, 0, 0, 0]]
    for i, (isa, lat, stall) in enumerate(rows, 1):
        code.append([isa, 0, i, f"/src/k.hip:{i}", 1, 4 * i, 8, lat, stall, 0])
    (d / "code.json").write_text(json.dumps({"version": "3.0.0", "header": HEADER, "code": code}))
    return d


def test_serialized_bpermute_and_barrier(tmp_path: Path) -> None:
    rows: list[tuple[str, int, int]] = []
    for _ in range(3):
        rows += [("ds_bpermute_b32 v1, v2, v3", 40, 10), ("s_waitcnt lgkmcnt(0)", 500, 500)]
    rows += [("s_barrier", 3000, 3000), ("v_add_f32_e32 v4, v5, v6", 100, 0)]
    res = profile_att(AttRequest(path=str(folder(tmp_path, rows))))
    f = {x.rule: x for x in res.findings}
    assert f["att_serialized_bpermute"].measured.startswith("3 ds_bpermute/permute/swizzle ops")
    assert "1500 stall cycles" in f["att_serialized_bpermute"].measured
    assert f["att_barrier"].measured == "66.2% of stall (3000 cycles) at s_barrier"  # of 4530
    assert f["att_lgkm_wait"].measured == "33.1% of stall (1500 cycles) in s_waitcnt lgkmcnt waits"
    assert [b.bucket for b in res.stall_taxonomy] == ["barrier", "lgkm_wait", "lds"]
    assert res.totals.waves_sampled == 0 and any("filenames.json missing" in w for w in res.warnings)
    assert res.wave_states == [] and res.occupancy == []


def test_vgprs_just_over_a_wave_threshold(tmp_path: Path) -> None:
    d = folder(tmp_path, [("v_mov_b32_e32 v99, v1", 10, 0), ("s_waitcnt vmcnt(0)", 900, 900)])
    res = profile_att(AttRequest(path=str(d), arch="gfx942", vgprs=100, lds_bytes=0, block_size=256))
    r = res.registers
    assert r is not None and (r.waves_per_simd, r.vgprs_for_next_wave, r.vgprs_to_free) == (4, 96, 4)
    f = {x.rule: x for x in res.findings}["att_register_pressure"]
    assert f.verdict == "occupancy limited by VGPRs" and "free 4 (to 96)" in f.measured
    assert {x.rule for x in res.findings} >= {"att_stall_bound", "att_vmem_wait"}


def test_gfx12_split_counters(tmp_path: Path) -> None:
    d = folder(
        tmp_path,
        [
            ("s_wait_loadcnt 0x0", 70, 70),
            ("s_wait_dscnt 0x0", 20, 20),
            ("v_wmma_f32_16x16x16_f16 v[0:7]", 10, 10),
        ],
    )
    res = profile_att(AttRequest(path=str(d)))
    assert {b.bucket: b.stall_cycles for b in res.stall_taxonomy} == {
        "vmem_wait": 70,
        "lgkm_wait": 20,
        "mfma_fma": 10,
    }
    assert {c.cls for c in res.classes} == {"waitcnt", "mfma"}


def test_registers_from_a_code_object(tmp_path: Path) -> None:
    """A real HSACO (tests/fixtures/isa/amd, clang for gfx942) gives registers, LDS and arch for the model."""
    hsaco = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "amd" / "k.gfx942.hsaco"
    d = folder(tmp_path, [("v_add_f32_e32 v4, v5, v6", 10, 5)])
    res = profile_att(AttRequest(path=str(d), code_object=str(hsaco), kernel="^vec4_add$"))
    r = res.registers
    assert r is not None and r.source == f"code object {hsaco}" and r.arch == "gfx942"
    assert (r.vgprs, r.waves_per_simd, r.limiter) == (10, 8, "waves") and r.vgprs_to_free is None
    res = profile_att(AttRequest(path=str(d), code_object=str(hsaco), kernel="^matrix_core$"))
    assert res.registers is not None and (res.registers.vgprs, res.registers.agprs) == (16, 4)
