"""Issue 41: gzip traces are inflated in time linear in the file for any member count, and within a cap tied
to the file's size and the machine's memory, refused with both figures named (`workload.readers.gzipped`).
"""

from __future__ import annotations

import gzip
import struct
import tracemalloc
import zlib
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.workload.core import read_workload
from kernelpilot.workload.errors import TraceFormatError
from kernelpilot.workload.models import WorkloadReadRequest
from kernelpilot.workload.readers import gzipped
from kernelpilot.workload.readers.gzipped import MAX_RATIO, gunzip, inflate_limit

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workload"
EMPTY_MEMBER = gzip.compress(b"", mtime=0)
_DECOMPRESSOBJ = zlib.decompressobj  # 20 bytes: header, an empty deflate block, trailer


def _bomb(inflated: int) -> bytes:
    """A valid gzip file of `inflated` zero bytes: one 16 MiB block compressed and fully flushed (so it
    stands alone and can be repeated), repeated, a final block, the CRC and size trailer."""
    block = b"\0" * (16 * 2**20)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    n = inflated // len(block)
    crc = 0
    for _ in range(n):
        crc = zlib.crc32(block, crc)
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
    return head + body * n + c.flush() + struct.pack("<II", crc, (n * len(block)) & 0xFFFFFFFF)


@pytest.mark.parametrize(
    "name", ["h100_decode_graph_trace.json", "h100_train_trace.json", "h100_decode_trace.json"]
)
def test_real_traces_inflate_well_inside_the_ratio(name: str) -> None:
    """The cap's multiple has room over what real traces do (the graph trace, the most repetitive: ~33x)."""
    plain = (FIX / name).read_bytes()
    packed = gzip.compress(plain)
    assert len(plain) / len(packed) < MAX_RATIO / 2
    assert gunzip(packed, name) == plain


class _Counting:
    """zlib.decompressobj with the bytes fed to it counted (the work a member costs)."""

    fed = 0

    def __init__(self, *args: Any, **kw: Any) -> None:
        self._d = _DECOMPRESSOBJ(*args, **kw)

    def decompress(self, data: Any, max_length: int = 0) -> bytes:
        _Counting.fed += len(data)
        return self._d.decompress(data, max_length)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._d, name)


def test_many_empty_members_cost_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """200,000 empty members (4 MB; 600,000 took over 60 s) then a real one: the bytes zlib is handed stay
    within a small multiple of the file (before: the rest of the file once per member, O(members x size))."""
    real = gzip.compress(b'{"traceEvents": []}')
    data = EMPTY_MEMBER * 200_000 + real
    monkeypatch.setattr(gzipped.zlib, "decompressobj", _Counting)
    _Counting.fed = 0
    assert gunzip(data, "many.gz") == b'{"traceEvents": []}'
    assert _Counting.fed <= 20 * len(data)


def test_zero_padding_between_members_is_skipped() -> None:
    assert gunzip(EMPTY_MEMBER * 3, "empty.gz") == b""  # an empty member last is complete, not truncated
    assert gunzip(gzip.compress(b"a") + b"\0" * 4096 + gzip.compress(b"b") + b"\0" * 7, "pad.gz") == b"ab"


def test_a_1_mb_file_that_inflates_to_1_gib_is_refused_early(tmp_path: Path) -> None:
    """Refused at the cap (100x the file), never near the gigabyte: the traced peak stays in the hundreds of
    MB (the inflated pieces up to the cap), and the error names both figures of the cap."""
    bomb = _bomb(2**30)
    assert len(bomb) < 1.2 * 2**20
    tracemalloc.start()
    try:
        with pytest.raises(TraceFormatError) as err:
            gunzip(bomb, "bomb.json.gz")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    limit, _ = inflate_limit(len(bomb))
    assert limit <= MAX_RATIO * len(bomb) and peak < limit + 64 * 2**20 < 2**30 // 4
    text = str(err.value)
    assert f"{MAX_RATIO}x its" in text and "machine's" in text and f"{limit:,} bytes" in text
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(bomb)
    with pytest.raises(TraceFormatError, match="inflates past"):
        read_workload(WorkloadReadRequest(path=str(path)))


def test_the_limit_follows_the_machine_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gzipped, "machine_memory", lambda: 8 * 2**30)
    limit, why = inflate_limit(100 * 2**20)
    assert limit == 2**30 and "1/8 of this machine's 8.0 GiB" in why  # memory, not 100 x 100 MiB
    limit, why = inflate_limit(2**20)
    assert limit == MAX_RATIO * 2**20 and "100x its 1.0 MiB" in why
    assert inflate_limit(10)[0] == gzipped.MIN_LIMIT  # a tiny file may still inflate to 16 MiB


def test_garbage_after_a_member_and_a_truncated_member_are_typed() -> None:
    with pytest.raises(TraceFormatError, match="does not inflate"):
        gunzip(gzip.compress(b"a") + b"\x1f\x8bnot gzip at all", "g.gz")
    with pytest.raises(TraceFormatError, match="ends early"):
        gunzip(EMPTY_MEMBER * 1000 + gzip.compress(b"abc" * 1000)[:-12], "t.gz")
