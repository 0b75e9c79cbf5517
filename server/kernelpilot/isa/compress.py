"""Decompressors for compressed code-object payloads: LZ4 block (pure Python), ZSTD (`zstandard`) and zlib.

Output size is always capped by the size the container declares, so a corrupt stream cannot grow memory
beyond it.
"""

from __future__ import annotations

import threading
import zlib

import zstandard

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


# A ZSTD block decodes to at most 128 KiB and costs at least its 3-byte header (RFC 8878, section 3.1.1.2,
# "Block_Maximum_Size" and "Block_Header"): a frame cannot decode to more than this many bytes per input byte.
ZSTD_MAX_RATIO = -(-128 * 1024 // 3)

_per_thread = threading.local()


def _decompressor() -> zstandard.ZstdDecompressor:
    """This thread's `zstandard.ZstdDecompressor`: one must not be used by two threads at once (that crashed
    the process or reported corrupt data when the prefetch threads decoded together)."""
    dctx: zstandard.ZstdDecompressor | None = getattr(_per_thread, "zstandard", None)
    if dctx is None:
        dctx = _per_thread.zstandard = zstandard.ZstdDecompressor()
    return dctx


def _check_zstd_size(src: bytes | memoryview, expected_size: int, label: str) -> None:
    """Refuse a declared size the frame contradicts or that the input cannot decode to, before anything of
    that size is allocated."""
    if expected_size <= 0:
        raise CodeObjectError(label, "ZSTD payload without a declared decompressed size")
    if expected_size > len(src) * ZSTD_MAX_RATIO:
        raise CodeObjectError(
            label, f"declared decompressed size {expected_size} is impossible for {len(src)} ZSTD bytes"
        )
    try:
        frame_size = zstandard.frame_content_size(src)
    except zstandard.ZstdError as exc:
        raise CodeObjectError(label, f"ZSTD payload does not decode: {exc}") from exc
    if frame_size >= 0 and frame_size != expected_size:
        raise CodeObjectError(
            label, f"ZSTD frame says {frame_size} decompressed bytes, the container says {expected_size}"
        )


def zstd_decompress(src: bytes | memoryview, expected_size: int, label: str) -> bytes:
    """Decode a ZSTD frame whose decoded size the container declares (`expected_size` > 0); the output is
    capped at that size, so a corrupt stream cannot grow memory beyond it."""
    _check_zstd_size(src, expected_size, label)
    try:
        out: bytes = _decompressor().decompress(src, max_output_size=expected_size)
    except zstandard.ZstdError as exc:
        raise CodeObjectError(label, f"ZSTD payload does not decode: {exc}") from exc
    if len(out) != expected_size:
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
    """Like `zstd_decompress`, but into `scratch` (valid until its next use)."""
    _check_zstd_size(src, expected_size, label)
    out = scratch.view(expected_size)
    try:
        reader = _decompressor().stream_reader(src)
        got = 0
        while got < expected_size:
            n = reader.readinto(out[got:])
            if not n:
                break
            got += n
        extra = reader.read(1) if got == expected_size else b""
    except zstandard.ZstdError as exc:
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
