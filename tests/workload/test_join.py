"""workload.join on code objects built here: an nvcc shared library (sm_90) and a clang HSACO (gfx942), joined
by the names the tools print for their kernels; registers checked against ptxas -v and clang's remarks."""

from __future__ import annotations

import mmap
import re
import shutil
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.workload.join import LaunchFacts, join_names, loaded_code_objects, search_order

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / "join"
SO = FIX / "libkp_names_demo.so"
HSACO = FIX / "names_demo.gfx942.hsaco"


def _ptxas_registers() -> dict[str, int]:
    text = (FIX / "ptxas_sm_90.txt").read_text()
    out, fn = {}, None
    for line in text.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            fn = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and fn:
            out[fn] = int(m.group(1))
    return out


def _clang_vgprs() -> dict[str, int]:
    out, fn = {}, None
    for line in (FIX / "remarks.gfx942.txt").read_text().splitlines():
        m = re.search(r"Function Name: (\S+)", line)
        if m:
            fn = m.group(1)
        m = re.search(r"VGPRs: (\d+)", line)
        if m and fn:
            out[fn] = int(m.group(1))
    return out


def test_trace_spellings_join_to_the_nvcc_symbols_with_their_registers() -> None:
    names = [
        "void kpdemo::(anonymous namespace)::anon_vec_kernel<float, 4>(float*, float const*, int)",
        "void kpdemo::<unnamed>::anon_vec_kernel<float, 1>(float*, float const*, int)",
        "void kpdemo::apply_kernel<float, kpdemo::Scale<float> >"
        "(float*, float const*, int, kpdemo::Scale<float>)",
        "kpdemo::overloaded(double*, int)",
        "plain_c_kernel",
    ]
    res = join_names(names, [SO], "sm_90", {names[0]: 64})
    regs = _ptxas_registers()
    assert [r.matched for r in res] == [True] * 5
    assert [r.how for r in res] == [
        "same normalized name",
        "same normalized name",
        "same normalized name",
        "same normalized name",
        "exact symbol",
    ]
    assert res[3].symbol == "_ZN6kpdemo10overloadedEPdi"
    for r in res:
        assert r.symbol is not None and r.registers == regs[r.symbol]
        assert r.code_object is not None and r.code_object.startswith(str(SO))
    assert res[0].occupancy is not None and "at block 64" in res[0].occupancy
    assert res[0].limiter


def test_unmatched_and_ambiguous_names_are_kept_with_the_reason() -> None:
    res = join_names(
        ["kpdemo::overloaded", "triton_poi_fused_add_0", "void kpdemo::apply_ker..."], [SO], "sm_90"
    )
    assert [r.name for r in res] == [
        "kpdemo::overloaded",
        "triton_poi_fused_add_0",
        "void kpdemo::apply_ker...",
    ]
    assert not res[0].matched and "ambiguous: 2 symbols named kpdemo::overloaded" in res[0].note
    assert not res[1].matched and "no symbol named 'triton_poi_fused_add_0'" in res[1].note
    # a cut name matches by prefix when one kernel starts that way
    assert res[2].matched and res[2].how == "cut name, only prefix match"
    assert res[2].symbol == "_ZN6kpdemo12apply_kernelIfNS_5ScaleIfEEEEvPT_PKS3_iT0_"


def test_wrong_arch_or_no_objects_says_why() -> None:
    (r,) = join_names(["plain_c_kernel"], [SO], "sm_80")
    assert not r.matched and "no kernel for sm_80 in the 1 code object(s)" in r.note
    (r,) = join_names(["plain_c_kernel"], [], "sm_90")
    assert not r.matched and r.note == "no code objects given to join against"


def test_amd_kd_symbols_and_rocprofv3_spellings_join_to_the_hsaco() -> None:
    names = [
        "_ZN5kpamd12_GLOBAL__N_115anon_vec_kernelIfLi4EEEvPT_PKS2_i.kd",  # mangled, as `--mangled-kernels`
        "kpamd::(anonymous namespace)::anon_vec_kernel<float, 4>",  # demangled without arguments
        "void kpamd::apply_kernel<float, kpamd::Scale<float> >"
        "(float*, float const*, int, kpamd::Scale<float>)",
        "plain_c_kernel.kd",
    ]
    res = join_names(names, [HSACO], "gfx942")
    vgprs = _clang_vgprs()
    assert all(r.matched for r in res), [r.note for r in res]
    assert [r.how for r in res] == [
        "same normalized name",
        "same name without parameters",
        "same normalized name",
        "same normalized name",
    ]
    for r in res:
        assert r.symbol is not None and r.registers == vgprs[r.symbol]
        assert r.arch == "gfx942" and r.occupancy is not None and "waves/CU" in r.occupancy


def test_loaded_code_objects_from_maps_triton_cache_and_extra(tmp_path: Path) -> None:
    libc = next(
        (
            p
            for p in ("/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6")
            if Path(p).is_file()
        ),
        None,
    )
    maps = f"7f0000000000-7f0000001000 r--p 00000000 08:01 1 {SO}\n"
    if libc:
        maps += f"7f0000002000-7f0000003000 r-xp 00000000 08:01 2 {libc}\n"
    maps += "7f0000004000-7f0000005000 rw-p 00000000 00:00 0 [heap]\n"
    cache = tmp_path / "triton"
    (cache / "abc123").mkdir(parents=True)
    shutil.copy(HSACO, cache / "abc123" / "k.hsaco")
    (cache / "abc123" / "k.json").write_text("{}")
    objs = loaded_code_objects(maps_text=maps, triton_cache=cache, extra=[HSACO])
    assert objs == [SO, cache / "abc123" / "k.hsaco", HSACO]
    assert search_order(objs)[0] == cache / "abc123" / "k.hsaco"
    with pytest.raises(InputFileError):
        loaded_code_objects(maps_text="", extra=[tmp_path / "missing.so"])


def test_loaded_code_objects_reads_this_process_maps(tmp_path: Path) -> None:
    """A library this process maps (here with mmap, as the dynamic loader does) is found; libc is not."""
    lib = tmp_path / "libcopy_of_demo.so"
    shutil.copy(SO, lib)
    with lib.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ):
        objs = loaded_code_objects(triton_cache=tmp_path / "none")
    assert lib in objs
    assert not any(p.name.startswith("libc.so") for p in objs)


def test_joined_occupancy_counts_per_the_unit_the_model_uses() -> None:
    """RDNA objects in WGP mode (clang's default on gfx10+) count waves per WGP, CU mode per CU: the join's
    occupancy text says which, as `isa fit` does (tests/fixtures/isa/amd/occ, PROVENANCE.md there)."""
    occ = FIX.parents[1] / "isa" / "amd" / "occ"
    wgp = join_names(["vgpr_65"], [occ / "occ.gfx1010.hsaco"], "gfx1010")[0]
    cu = join_names(["vgpr_65"], [occ / "occ.gfx1010cu.hsaco"], "gfx1010")[0]
    assert wgp.matched and wgp.occupancy is not None and "waves/WGP" in wgp.occupancy
    assert cu.matched and cu.occupancy is not None and "waves/CU" in cu.occupancy


def test_unknown_arch_gives_no_occupancy_and_says_why() -> None:
    """A kernel no file holds, from a capture that recorded no architecture: the trace's registers and shared
    memory stand, but no occupancy is stated (an H100's was assumed before), and the note says why."""
    facts = {"plain_c_kernel": LaunchFacts(registers=128, shared_bytes=49152, block=256)}
    (known,) = join_names(["plain_c_kernel"], [], "sm_90", None, facts)
    assert known.facts == "trace" and known.arch == "sm_90" and known.occupancy is not None
    (r,) = join_names(["plain_c_kernel"], [], None, None, facts)
    assert r.facts == "trace" and r.registers == 128 and r.shared_bytes == 49152
    assert r.arch is None and r.occupancy is None and r.limiter is None
    assert "no occupancy: the join was given no GPU architecture" in r.note
