"""Decompressors for compressed code-object payloads: LZ4 block (pure Python), ZSTD and zlib.

ZSTD uses the standard library (`compression.zstd`, Python 3.14+) or the `zstandard` / `pyzstd` package when
installed, else the pure-Python decoder in `zstd_py` (correct but ~6 MB/s; callers limit how much they feed it
and otherwise fall back to `cuobjdump` or report the entry as compressed). Output size is always capped by
the size the container declares, so a corrupt stream cannot grow memory beyond it.
"""

from __future__ import annotations

import importlib
import threading
import zlib
from collections.abc import Callable
from functools import cache
from typing import Any

from kernelpilot.isa.errors import CodeObjectError


def lz4_block_decompress(src: bytes | memoryview, expected_size: int, label: str) -> bytes:
    """Decode one LZ4 block (the format NVIDIA fatbins use for `FATBIN_FLAG_COMPRESS` entries)."""
    data = bytes(src)
    out = bytearray()
    pos, n = 0, len(data)
    limit = expected_size if expected_size > 0 else 64 * n + 64
    while pos < n:
        token = data[pos]
        pos += 1
        lit = token >> 4
        if lit == 15:
            while True:
                if pos >= n:
                    raise CodeObjectError(label, "LZ4 stream truncated in a literal length")
                b = data[pos]
                pos += 1
                lit += b
                if b != 255:
                    break
        if pos + lit > n:
            raise CodeObjectError(label, "LZ4 literal run overruns the compressed payload")
        out += data[pos : pos + lit]
        pos += lit
        if pos >= n:
            break
        if pos + 2 > n:
            raise CodeObjectError(label, "LZ4 stream truncated in a match offset")
        offset = data[pos] | (data[pos + 1] << 8)
        pos += 2
        mlen = (token & 15) + 4
        if (token & 15) == 15:
            while True:
                if pos >= n:
                    raise CodeObjectError(label, "LZ4 stream truncated in a match length")
                b = data[pos]
                pos += 1
                mlen += b
                if b != 255:
                    break
        start = len(out) - offset
        if offset == 0 or start < 0:
            raise CodeObjectError(label, f"LZ4 match offset {offset} points before the output start")
        if offset >= mlen:
            out += out[start : start + mlen]
        else:
            for i in range(mlen):
                out.append(out[start + i])
        if len(out) > limit:
            raise CodeObjectError(label, f"LZ4 output exceeds the declared size {expected_size}")
    return bytes(out)


_per_thread = threading.local()


def _zstandard_decompressor() -> Any:
    """This thread's `zstandard.ZstdDecompressor`: one must not be used by two threads at once (that crashed
    the process or reported corrupt data when the prefetch threads decoded together)."""
    dctx = getattr(_per_thread, "zstandard", None)
    if dctx is None:
        dctx = _per_thread.zstandard = importlib.import_module("zstandard").ZstdDecompressor()
    return dctx


@cache
def _zstd_impl() -> tuple[str, Callable[[bytes | memoryview, int], bytes]] | None:
    try:
        mod = importlib.import_module("compression.zstd")
        fn = mod.decompress

        def std(data: bytes | memoryview, size: int) -> bytes:
            out: bytes = fn(bytes(data))
            return out

        return ("compression.zstd", std)
    except ImportError:
        pass
    try:
        importlib.import_module("zstandard")

        def zs(data: bytes | memoryview, size: int) -> bytes:
            dctx = _zstandard_decompressor()
            out: bytes = dctx.decompress(data, max_output_size=size) if size > 0 else dctx.decompress(data)
            return out

        return ("zstandard", zs)
    except ImportError:
        pass
    try:
        pyzstd = importlib.import_module("pyzstd")

        def pz(data: bytes | memoryview, size: int) -> bytes:
            out: bytes = pyzstd.decompress(bytes(data))
            return out

        return ("pyzstd", pz)
    except ImportError:
        return None


# Above this many decompressed bytes per file, the pure-Python decoder is too slow to be the default.
PURE_PY_ZSTD_MAX_BYTES = 256 * 1024 * 1024


def zstd_native_available() -> bool:
    """True when a C ZSTD decoder (stdlib 3.14+, zstandard, pyzstd) is importable."""
    return _zstd_impl() is not None


def zstd_decompress(src: bytes | memoryview, expected_size: int, label: str) -> bytes:
    impl = _zstd_impl()
    try:
        if impl is None:
            from kernelpilot.isa.zstd_py import decompress as py_decompress

            out = py_decompress(bytes(src), expected_size if expected_size > 0 else 1 << 31)
        else:
            out = impl[1](src, expected_size)  # the C decoders read any buffer: no copy of the input
    except Exception as exc:  # ZstdError from the pure-Python decoder, the C decoders' own error types
        raise CodeObjectError(label, f"ZSTD payload does not decode: {exc}") from exc
    if expected_size and len(out) != expected_size:
        raise CodeObjectError(label, f"ZSTD payload decoded to {len(out)} bytes, header says {expected_size}")
    return out


class Scratch:
    """A reusable output buffer for decompressing many payloads in a row (a worker reading a large fatbin):
    writing into memory already mapped skips the page faults of a fresh multi-MB allocation per payload."""

    def __init__(self) -> None:
        self.buf = bytearray()

    def view(self, size: int) -> memoryview:
        if len(self.buf) < size:
            self.buf = bytearray(size)  # a new one: the old may still be exported to a live view
        return memoryview(self.buf)[:size]


def zstd_decompress_into(
    src: bytes | memoryview, expected_size: int, label: str, scratch: Scratch
) -> bytes | memoryview:
    """Like `zstd_decompress`, but into `scratch` (valid until its next use) where the decoder allows it."""
    impl = _zstd_impl()
    if expected_size <= 0 or impl is None or impl[0] != "zstandard":  # only zstandard reads into a buffer
        return zstd_decompress(src, expected_size, label)
    out = scratch.view(expected_size)
    try:
        reader = _zstandard_decompressor().stream_reader(src)
        got = 0
        while got < expected_size:
            n = reader.readinto(out[got:])
            if not n:
                break
            got += n
        extra = reader.read(1) if got == expected_size else b""
    except Exception as exc:  # zstandard raises its own error type on corrupt input
        raise CodeObjectError(label, f"ZSTD payload does not decode: {exc}") from exc
    if got != expected_size or extra:
        size = f"more than {got}" if extra else str(got)
        raise CodeObjectError(label, f"ZSTD payload decoded to {size} bytes, header says {expected_size}")
    return out


def zlib_decompress(src: bytes | memoryview, expected_size: int, label: str) -> bytes:
    d = zlib.decompressobj()
    try:
        out = d.decompress(bytes(src), expected_size or 0)
    except zlib.error as exc:
        raise CodeObjectError(label, f"zlib payload does not decode: {exc}") from exc
    return out
