"""NVIDIA readers against real nvcc/ptxas output: every kernel's registers/shared/stack equal ptxas -v and
cuobjdump -res-usage; fat binaries list every cubin and PTX with the right arch."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelpilot.isa import compress
from kernelpilot.isa.api import IsaListRequest, IsaResourcesRequest
from kernelpilot.isa.core import isa_list, isa_resources, parse_ptxas_log

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa" / "nvidia"
ARCHS = ["75", "80", "86", "89", "90", "100", "120"]


def ptxas_expected(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    cur = ""
    for line in path.read_text().splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            cur = m.group(1)
            out[cur] = {}
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            out[cur].update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
        m = re.search(r"Used (\d+) registers, used (\d+) barriers", line)
        if m and cur:
            out[cur].update(regs=int(m.group(1)), bar=int(m.group(2)))
            sm = re.search(r"(\d+) bytes smem", line)
            out[cur]["smem"] = int(sm.group(1)) if sm else 0
            cm = re.search(r"(\d+) bytes cmem\[0\]", line)
            if cm:
                out[cur]["cmem0"] = int(cm.group(1))
    return out


def resusage_expected(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    cur = ""
    for line in path.read_text().splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            cur = m.group(1)
            continue
        if cur and "REG:" in line:
            out[cur] = {k: int(v) for k, v in re.findall(r"(\w+(?:\[\d\])?):(\d+)", line)}
            cur = ""
    return out


@pytest.mark.parametrize("sm", ARCHS)
def test_cubin_matches_ptxas_and_cuobjdump(sm: str) -> None:
    res = isa_resources(IsaResourcesRequest(file=str(FX / f"kernels.sm_{sm}.cubin")))
    exp = ptxas_expected(FX / f"ptxas_sm_{sm}.txt")
    cuo = resusage_expected(FX / f"kernels.sm_{sm}.res-usage.txt")
    assert res.kernel_count == len(exp) == 11
    for k in res.kernels:
        assert k.arch == f"sm_{sm}"
        e = exp[k.name]
        assert k.registers == e["regs"], k.name
        assert k.stack_frame_bytes == e["stack"], k.name
        assert k.static_shared_bytes == e["smem"], k.name
        assert k.barriers == e["bar"], k.name
        if "cmem0" in e:
            assert k.constant_banks["0"] == e["cmem0"], k.name
        c = cuo[k.name]
        assert (k.registers, k.stack_frame_bytes, k.shared_section_bytes) == (
            c["REG"],
            c["STACK"],
            c["SHARED"],
        )
        assert k.constant_banks["0"] == c["CONSTANT[0]"]
        assert k.constant_banks["3"] == 256  # __constant__ float coeffs[64]


def test_launch_bounds_regcap_and_names() -> None:
    res = isa_resources(IsaResourcesRequest(file=str(FX / "kernels.sm_90.cubin")))
    by = {k.name: k for k in res.kernels}
    assert by["poly_const"].max_threads_per_block == 128
    assert by["poly_const"].max_registers == 128
    assert by["smem_reduce"].max_threads_per_block == 256
    assert by["spill_heavy"].max_registers == 32
    assert by["wmma_gemm"].uses_wmma is True and by["scalar_add"].uses_wmma is False
    assert by["_ZN2kp5scaleEPffi"].demangled.startswith("kp::scale(")
    assert "axpy<float>" in by["_Z4axpyIfEvT_PKS0_PS0_i"].demangled


def test_required_block_size_from_reqntid() -> None:
    res = isa_resources(IsaResourcesRequest(file=str(FX / "reqntid.sm_90.cubin")))
    (k,) = res.kernels
    assert k.name == "fixed_block"
    assert k.required_block_size == [128, 1, 1]
    assert k.max_threads_per_block == 128
    assert (k.registers, k.static_shared_bytes, k.barriers, k.max_registers) == (10, 512, 1, 64)


def test_kernel_regex_and_ptxas_log_spills() -> None:
    res = isa_resources(
        IsaResourcesRequest(
            file=str(FX / "kernels.sm_80.cubin"), kernel="spill", ptxas_log=str(FX / "ptxas_sm_80.txt")
        )
    )
    (k,) = res.kernels
    assert k.spills_recorded and (k.spill_store_bytes, k.spill_load_bytes) == (344, 372)
    assert parse_ptxas_log((FX / "ptxas_sm_80.txt").read_text())[("spill_heavy", "sm_80")] == (192, 344, 372)


def test_host_executable_lists_every_cubin_and_ptx() -> None:
    listing = isa_list(IsaListRequest(file=str(FX / "host_app")))
    expected = re.findall(
        r"(ELF|PTX) file\s+\d+: host_app_none\.\d+\.(sm_\d+)",
        (FX / "host_app.cuobjdump-list.txt").read_text(),
    )
    cubins = [e.arch for e in listing.entries if e.kind == "cubin"]
    ptx = [e.arch for e in listing.entries if e.kind == "ptx"]
    assert sorted(cubins) == sorted(a for kind, a in expected if kind == "ELF")
    assert ptx == ["compute_120"] == [a.replace("sm_", "compute_") for kind, a in expected if kind == "PTX"]
    res = isa_resources(IsaResourcesRequest(file=str(FX / "host_app"), arch="sm_90"))
    assert {k.demangled for k in res.kernels} == {"fill", "saxpy(float, float const*, float*, int)"}
    assert all(k.arch == "sm_90" for k in res.kernels)


def test_zstd_fatbin_decoded_in_process() -> None:
    res = isa_resources(IsaResourcesRequest(file=str(FX / "host_app_zstd")))
    plain = isa_resources(IsaResourcesRequest(file=str(FX / "host_app")))
    key = [(k.arch, k.name, k.registers, k.stack_frame_bytes) for k in res.kernels]
    assert key == [(k.arch, k.name, k.registers, k.stack_frame_bytes) for k in plain.kernels]
    assert {e.compressed for e in res.entries} == {"zstd"}


def test_zstd_declared_size_checked_before_allocating() -> None:
    # a container that declares more than the frame (or than the input could ever decode to) is refused
    # before a buffer of the declared size exists
    import zstandard

    from kernelpilot.isa.errors import CodeObjectError

    frame = zstandard.ZstdCompressor().compress(b"x" * 1000)
    assert compress.zstd_decompress(frame, 1000, "f") == b"x" * 1000
    with pytest.raises(CodeObjectError, match="frame says 1000"):
        compress.zstd_decompress(frame, 1001, "f")
    with pytest.raises(CodeObjectError, match="impossible"):
        compress.zstd_decompress_into(frame, 1 << 50, "f", compress.Scratch())
    bare = zstandard.ZstdCompressor(write_content_size=False).compress(b"y" * 5000)
    with pytest.raises(CodeObjectError, match="decoded to"):
        compress.zstd_decompress_into(bare, 4000, "f", compress.Scratch())


def test_lz4_block_roundtrip_known_vector() -> None:
    # LZ4 block: literals "abcd", then a match of 8 bytes at offset 4 -> "abcdabcdabcd", then literal "!"
    block = bytes([0x44]) + b"abcd" + bytes([4, 0]) + bytes([0x10]) + b"!"
    assert compress.lz4_block_decompress(block, 13, "t") == b"abcdabcdabcd!"


def test_cli_resources_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("isa", "resources", str(FX / "kernels.sm_86.cubin"), "-k", "^vec4_add$", "--json")
    assert r.code == 0, r.err
    assert '"registers": 18' in r.out


def test_standalone_fatbin_and_lz4_entries() -> None:
    plain = isa_list(IsaListRequest(file=str(FX / "host_app.fatbin")))
    assert [(e.kind, e.arch) for e in plain.entries] == [
        ("cubin", "sm_80"),
        ("cubin", "sm_90"),
        ("ptx", "compute_90"),
    ]
    assert plain.entries[2].kernel_count == 2
    lz4 = isa_list(IsaListRequest(file=str(FX / "host_app_lz4.fatbin")))
    assert {e.compressed for e in lz4.entries} == {"lz4"}
    a = isa_resources(IsaResourcesRequest(file=str(FX / "host_app.fatbin")))
    b = isa_resources(IsaResourcesRequest(file=str(FX / "host_app_lz4.fatbin")))
    assert [(k.arch, k.name, k.registers, k.constant_banks) for k in a.kernels] == [
        (k.arch, k.name, k.registers, k.constant_banks) for k in b.kernels
    ]
    assert len(a.kernels) == 4


def test_standalone_ptx_is_listed() -> None:
    listing = isa_list(IsaListRequest(file=str(FX / "reqntid.ptx")))
    (e,) = listing.entries
    assert (e.kind, e.arch, e.kernel_count) == ("ptx", "compute_90", 1)


def test_manifest_written_atomically(tmp_path: Path) -> None:
    import json

    out = tmp_path / "isa_manifest.json"
    res = isa_resources(IsaResourcesRequest(file=str(FX / "host_app"), arch="sm_80", manifest=str(out)))
    data = json.loads(out.read_text())
    assert data["manifest_version"] == 1 and data["manifest_path"] == str(out)
    ids = {k["kernel_id"] for k in data["kernels"]}
    assert ids == {k.kernel_id for k in res.kernels} and "host_app.6.sm_80.cubin::fill" in ids
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp files left


@pytest.mark.needs_tool("nvdisasm")
def test_disasm_fatbin_entry_on_demand(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli(
        "isa", "disasm", str(FX / "host_app_zstd"), "--arch", "sm_80", "-k", "saxpy", "--max-lines", "5"
    )
    assert r.code == 0, r.err
    assert "saxpy(float, float const*, float*, int) (sm_80" in r.out
    assert "truncated" in r.out and "/*0000*/" in r.out


def test_max_kernels_cut_is_said_and_the_manifest_keeps_every_kernel(tmp_path: Path) -> None:
    full = isa_resources(IsaResourcesRequest(file=str(FX / "host_app")))
    assert full.kernel_count > 2 and not any("listing the first" in w for w in full.warnings)
    manifest = tmp_path / "m.json"
    cut = isa_resources(IsaResourcesRequest(file=str(FX / "host_app"), max_kernels=1, manifest=str(manifest)))
    assert cut.kernel_count == full.kernel_count and len(cut.kernels) == 1
    assert any(f"listing the first 1 of {full.kernel_count} kernels" in w for w in cut.warnings)
    import json

    assert len(json.loads(manifest.read_text())["kernels"]) == full.kernel_count
