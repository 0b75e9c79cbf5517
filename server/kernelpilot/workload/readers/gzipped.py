"""Gzip-compressed traces: torch.profiler's `tensorboard_trace_handler(use_gzip=True)` writes `.json.gz`.

Told by the content's magic bytes (1f 8b), never by the suffix, so a renamed file reads the same; a
truncated or corrupt stream is a typed error naming which.

Inflating is linear in the input for any member count: each member is fed from a memoryview in windows that
start small and double, so what zlib copies back (`unconsumed_tail`, `unused_data`) is bounded by the member
(slicing `unused_data` as the rest of the file made 600,000 empty members cost O(members x size): a 12 MB
file took over 60 s). The inflated size is capped by `inflate_limit`: the smaller of `MAX_RATIO` times the
file (the most compressible recorded trace, a CUDA-graph decode step, inflates 33x) and an eighth of the
machine's memory (the JSON is then parsed into objects several times its size); a file past it is refused
as soon as the inflated bytes cross it, so a 1 MB file that inflates to 1 GiB stops at 100 MB.
"""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

from kernelpilot.workload.errors import TraceFormatError

GZIP_MAGIC = b"\x1f\x8b"
MAX_INFLATED_BYTES = 16 * 2**30  # a trace is decoded whole in memory: past this it needs a machine of its own
MAX_RATIO = (
    100  # inflated / compressed; real Kineto and CSV traces: 8x to 33x (tests/workload/test_gzip_limits)
)
MIN_LIMIT = 16 * 2**20  # a small file may inflate this far whatever its ratio: harmless at any size
MEMORY_SHARE = 8  # at most 1/8 of the machine's memory
_CHUNK = 1 << 24
_FIRST_WINDOW = 256
_MAX_WINDOW = 1 << 20
_ZEROS = re.compile(rb"\0*")


def is_gzip(data: bytes) -> bool:
    return data[:2] == GZIP_MAGIC


def machine_memory() -> int:
    """Physical memory in bytes (0 when the OS does not say)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # no sysconf names (not POSIX): no memory cap
        return 0


def _size(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def inflate_limit(compressed: int, max_bytes: int = MAX_INFLATED_BYTES) -> tuple[int, str]:
    """(bytes a gzip file of `compressed` bytes may inflate to, the rule in words with both figures)."""
    by_ratio = max(MAX_RATIO * compressed, MIN_LIMIT)
    memory = machine_memory()
    by_memory = memory // MEMORY_SHARE if memory else max_bytes
    limit = min(by_ratio, by_memory, max_bytes)
    why = (
        f"{MAX_RATIO}x its {_size(compressed)} = {_size(by_ratio)}, and 1/{MEMORY_SHARE} of this machine's "
        f"{_size(memory)} memory = {_size(by_memory)}"
        if memory
        else f"{MAX_RATIO}x its {_size(compressed)} = {_size(by_ratio)}"
    )
    return limit, f"the limit is the smaller of {why}"


def gunzip(data: bytes, source: str, max_bytes: int = MAX_INFLATED_BYTES) -> bytes:
    """The inflated bytes of a gzip stream (every member, as `cat a.gz b.gz` makes), within `inflate_limit`
    (module docstring)."""
    limit, why = inflate_limit(len(data), max_bytes)
    view = memoryview(data)
    out: list[bytes] = []
    size = 0
    pos = 0
    while pos < len(data):
        d = zlib.decompressobj(wbits=31)
        window = _FIRST_WINDOW
        try:
            while not d.eof:
                end = min(len(data), pos + window)
                piece = d.decompress(view[pos:end], _CHUNK)
                pos = end - len(d.unconsumed_tail) - len(d.unused_data)
                if piece:
                    size += len(piece)
                    if size > limit:
                        raise TraceFormatError(
                            f"trace {source!r} inflates past {limit:,} bytes ({why})",
                            "give a smaller trace (fewer steps) or split it; a real trace inflates 8-33x",
                        )
                    out.append(piece)
                elif pos >= len(data) and not d.eof:
                    raise TraceFormatError(
                        f"trace {source!r} is gzip data that ends early (truncated)",
                        "record it again and let the profiler finish writing",
                    )
                window = min(window * 2, _MAX_WINDOW)
        except zlib.error as exc:
            raise TraceFormatError(
                f"trace {source!r} is gzip data that does not inflate ({exc})",
                "record it again and let the profiler finish writing",
            ) from exc
        pos = _ZEROS.match(data, pos).end()  # type: ignore[union-attr]  # zero padding is not a member
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
