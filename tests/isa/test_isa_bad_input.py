"""Bad input: truncated, corrupted, non-ELF, wrong machine, unknown arch, bad notes -> typed errors naming the
file; never a traceback or a hang; memory bounded by the file size."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.isa.api import IsaResourcesRequest
from kernelpilot.isa.core import isa_resources
from kernelpilot.isa.errors import CodeObjectError, KernelNotFoundError, UnsupportedCodeObjectError
from kernelpilot.isa.loader import load

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa"
CUBIN = FX / "nvidia" / "kernels.sm_90.cubin"
HSACO = FX / "amd" / "k.gfx1100.hsaco"


def _write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_missing_file() -> None:
    with pytest.raises(InputFileError) as ei:
        load(Path("/nonexistent/k.cubin"))
    assert "k.cubin" in ei.value.message


def test_empty_and_non_elf(tmp_path: Path) -> None:
    with pytest.raises(CodeObjectError) as ei:
        load(_write(tmp_path, "empty.cubin", b""))
    assert "empty.cubin" in ei.value.message
    with pytest.raises(CodeObjectError) as ei:
        load(_write(tmp_path, "notes.txt", b"hello, this is not a code object\n" * 10))
    assert "notes.txt" in ei.value.message and "not a GPU code object" in ei.value.message


@pytest.mark.parametrize("src", [CUBIN, HSACO])
@pytest.mark.parametrize("frac", [0.05, 0.3, 0.6, 0.95])
def test_truncated(tmp_path: Path, src: Path, frac: float) -> None:
    data = src.read_bytes()
    p = _write(tmp_path, "cut_" + src.name, data[: int(len(data) * frac)])
    with pytest.raises(CodeObjectError) as ei:
        load(p)
    assert p.name in ei.value.message and ("truncated" in ei.value.message or "header" in ei.value.message)


def test_wrong_machine(tmp_path: Path) -> None:
    data = bytearray(CUBIN.read_bytes())
    struct.pack_into("<H", data, 18, 40)  # e_machine = ARM: a host ELF without GPU sections
    with pytest.raises(UnsupportedCodeObjectError) as ei:
        load(_write(tmp_path, "arm.o", bytes(data)))
    assert "arm.o" in ei.value.message and "no GPU code" in ei.value.message


def test_elf32_rejected(tmp_path: Path) -> None:
    data = bytearray(CUBIN.read_bytes())
    data[4] = 1
    with pytest.raises(CodeObjectError, match="ELF64"):
        load(_write(tmp_path, "k32.cubin", bytes(data)))


def test_corrupt_section_table(tmp_path: Path) -> None:
    data = bytearray(CUBIN.read_bytes())
    shoff = struct.unpack_from("<Q", data, 0x28)[0]
    struct.pack_into("<Q", data, shoff + 64 * 3 + 24, 10**12)  # section 3 offset far past the end
    with pytest.raises(CodeObjectError, match="corrupt"):
        load(_write(tmp_path, "badsec.cubin", bytes(data)))


def test_fatbin_with_huge_declared_size(tmp_path: Path) -> None:
    blob = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, 1 << 40) + b"\0" * 64
    with pytest.raises(CodeObjectError, match="declares"):
        load(_write(tmp_path, "huge.fatbin", blob))


def test_fatbin_entry_corrupt_size(tmp_path: Path) -> None:
    ent = struct.pack("<HHIQIIHHIIIQQQ", 2, 0x101, 64, 1 << 33, 0, 0, 8, 1, 90, 0, 0, 0x11, 0, 0)
    blob = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(ent)) + ent
    with pytest.raises(CodeObjectError, match="corrupt size"):
        load(_write(tmp_path, "ent.fatbin", blob))


def test_corrupt_lz4_entry(tmp_path: Path) -> None:
    payload = bytes([0x0F, 0xFF, 0xFF])  # match with an offset before the output start
    ent = struct.pack(
        "<HHIQIIHHIIIQQQ", 2, 0x101, 64, len(payload), len(payload), 0, 8, 1, 90, 0, 0, 0x2011, 0, 4096
    )
    blob = struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(ent) + len(payload)) + ent + payload
    with pytest.raises(CodeObjectError, match="LZ4") as ei:
        load(_write(tmp_path, "lz4.fatbin", blob))
    assert "lz4.fatbin" in ei.value.message


def test_bundle_with_bad_count(tmp_path: Path) -> None:
    blob = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", 1 << 40)
    with pytest.raises(CodeObjectError, match="entries"):
        load(_write(tmp_path, "b.hipfb", blob))


def test_ccob_unknown_version(tmp_path: Path) -> None:
    with pytest.raises(CodeObjectError, match="version 9"):
        load(_write(tmp_path, "c.hipfb", b"CCOB" + struct.pack("<HH", 9, 0) + b"\0" * 40))


def test_bad_regex_and_no_match() -> None:
    from kernelpilot.foundation.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError):
        isa_resources(IsaResourcesRequest(file=str(CUBIN), kernel="("))
    with pytest.raises(KernelNotFoundError) as ei:
        isa_resources(IsaResourcesRequest(file=str(CUBIN), kernel="no_such_kernel"))
    assert "scalar_add" in ei.value.hint


def test_cli_bad_file_exit_code(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = _write(tmp_path, "junk.bin", b"\x7fELF\x02\x01\x01" + b"\0" * 20)
    r = run_cli("isa", "resources", str(p))
    assert r.code != 0 and "junk.bin" in r.err and "Traceback" not in r.err


def test_capabilities_registered() -> None:
    from kernelpilot.capabilities import all_capabilities

    tools = {c.tool: c.command for c in all_capabilities()}
    assert tools["isa_resources"] == ("isa", "resources")
    assert tools["isa_fit_view"] == ("isa", "fit")
    for t in ("isa_disasm", "isa_mix", "isa_occupancy", "isa_list"):
        assert t in tools
