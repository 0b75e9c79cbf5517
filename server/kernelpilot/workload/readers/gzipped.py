"""Gzip-compressed traces: torch.profiler's `tensorboard_trace_handler(use_gzip=True)` writes `.json.gz`.

Told by the content's magic bytes (1f 8b), never by the suffix, so a renamed file reads the same; inflated
with the reader's size limit (a small file that inflates to terabytes is refused, not decoded), and a
truncated or corrupt stream is a typed error naming which.
"""

from __future__ import annotations

import zlib
from pathlib import Path

from kernelpilot.workload.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
MAX_INFLATED_BYTES = 16 * 2**30  # a trace is decoded whole in memory: past this it needs a machine of its own
_CHUNK = 1 << 24


def is_gzip(data: bytes) -> bool:
    return data[:2] == GZIP_MAGIC


def gunzip(data: bytes, source: str, max_bytes: int) -> bytes:
    """The inflated bytes of a gzip stream (every member, as `cat a.gz b.gz` makes), at most `max_bytes`."""
    out: list[bytes] = []
    size = 0
    rest = data
    while rest:
        d = zlib.decompressobj(wbits=31)
        try:
            while rest:
                chunk = d.decompress(rest, _CHUNK)
                size += len(chunk)
                if size > max_bytes:
                    raise TraceFormatError(
                        f"trace {source!r} inflates past {max_bytes:,} bytes",
                        "give a smaller trace (fewer steps), or split it",
                    )
                out.append(chunk)
                rest = d.unconsumed_tail
                if d.eof:
                    break
        except zlib.error as exc:
            raise TraceFormatError(
                f"trace {source!r} is gzip data that does not inflate ({exc})",
                "record it again and let the profiler finish writing",
            ) from exc
        if not d.eof:
            raise TraceFormatError(
                f"trace {source!r} is gzip data that ends early (truncated)",
                "record it again and let the profiler finish writing",
            )
        rest = d.unused_data.lstrip(b"\0")  # members may follow; trailing zero padding is not one
    return b"".join(out)


def maybe_gunzip(data: bytes, source: str, max_bytes: int = MAX_INFLATED_BYTES) -> bytes:
    """`data` inflated when it is gzip, else unchanged."""
    return gunzip(data, source, max_bytes) if is_gzip(data) else data


def head(path: Path, n: int = 64) -> bytes:
    """The first `n` bytes of the file's content, inflated first when it is gzip (for format detection)."""
    with path.open("rb") as fh:
        raw = fh.read(1 << 16)
    if not is_gzip(raw):
        return raw[:n]
    try:
        return zlib.decompressobj(wbits=31).decompress(raw, n)
    except zlib.error as exc:
        raise TraceFormatError(
            f"trace {str(path)!r} is gzip data that does not inflate ({exc})",
            "record it again and let the profiler finish writing",
        ) from exc
