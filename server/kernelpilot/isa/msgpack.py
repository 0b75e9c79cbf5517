"""A small, strict MessagePack decoder (https://github.com/msgpack/msgpack/blob/master/spec.md).

Enough for the AMDGPU code-object metadata note (maps, arrays, strings, ints, floats, bools, nil, bin);
ext types decode to bytes. Depth and container sizes are bounded by the input length, so corrupt input
raises `MsgpackError` quickly instead of allocating or recursing without bound.
"""

from __future__ import annotations

import struct
from typing import Any

MAX_DEPTH = 64


class MsgpackError(ValueError):
    """The bytes are not valid MessagePack (what and where in the message)."""


def unpackb(data: bytes | memoryview) -> Any:
    buf = bytes(data)
    value, pos = _decode(buf, 0, 0)
    # trailing padding zeros are allowed in ELF notes
    if pos != len(buf) and buf[pos:].strip(b"\0"):
        raise MsgpackError(f"{len(buf) - pos} trailing bytes after the message at offset {pos}")
    return value


def _need(buf: bytes, pos: int, n: int) -> None:
    if pos + n > len(buf):
        raise MsgpackError(f"truncated: need {n} bytes at offset {pos}, have {len(buf) - pos}")


def _decode(buf: bytes, pos: int, depth: int) -> tuple[Any, int]:
    if depth > MAX_DEPTH:
        raise MsgpackError("nesting deeper than 64 levels")
    _need(buf, pos, 1)
    b = buf[pos]
    pos += 1
    if b <= 0x7F:
        return b, pos
    if b >= 0xE0:
        return b - 0x100, pos
    if 0x80 <= b <= 0x8F:
        return _map(buf, pos, b & 0x0F, depth)
    if 0x90 <= b <= 0x9F:
        return _array(buf, pos, b & 0x0F, depth)
    if 0xA0 <= b <= 0xBF:
        return _str(buf, pos, b & 0x1F)
    if b == 0xC0:
        return None, pos
    if b == 0xC2:
        return False, pos
    if b == 0xC3:
        return True, pos
    if b in (0xC4, 0xC5, 0xC6):
        n, pos = _len(buf, pos, {0xC4: 1, 0xC5: 2, 0xC6: 4}[b])
        _need(buf, pos, n)
        return buf[pos : pos + n], pos + n
    if b in (0xC7, 0xC8, 0xC9):
        n, pos = _len(buf, pos, {0xC7: 1, 0xC8: 2, 0xC9: 4}[b])
        _need(buf, pos, n + 1)
        return buf[pos + 1 : pos + 1 + n], pos + 1 + n
    if b == 0xCA:
        _need(buf, pos, 4)
        return struct.unpack_from(">f", buf, pos)[0], pos + 4
    if b == 0xCB:
        _need(buf, pos, 8)
        return struct.unpack_from(">d", buf, pos)[0], pos + 8
    fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q"}
    if b in fixed:
        fmt = fixed[b]
        size = struct.calcsize(fmt)
        _need(buf, pos, size)
        return struct.unpack_from(fmt, buf, pos)[0], pos + size
    if b in (0xD4, 0xD5, 0xD6, 0xD7, 0xD8):
        n = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}[b]
        _need(buf, pos, n + 1)
        return buf[pos + 1 : pos + 1 + n], pos + 1 + n
    if b in (0xD9, 0xDA, 0xDB):
        n, pos = _len(buf, pos, {0xD9: 1, 0xDA: 2, 0xDB: 4}[b])
        return _str(buf, pos, n)
    if b in (0xDC, 0xDD):
        n, pos = _len(buf, pos, 2 if b == 0xDC else 4)
        return _array(buf, pos, n, depth)
    if b in (0xDE, 0xDF):
        n, pos = _len(buf, pos, 2 if b == 0xDE else 4)
        return _map(buf, pos, n, depth)
    raise MsgpackError(f"invalid type byte {b:#04x} at offset {pos - 1}")


def _len(buf: bytes, pos: int, size: int) -> tuple[int, int]:
    _need(buf, pos, size)
    return int.from_bytes(buf[pos : pos + size], "big"), pos + size


def _str(buf: bytes, pos: int, n: int) -> tuple[str, int]:
    _need(buf, pos, n)
    try:
        return buf[pos : pos + n].decode("utf-8"), pos + n
    except UnicodeDecodeError as exc:
        raise MsgpackError(f"string at offset {pos} is not UTF-8") from exc


def _array(buf: bytes, pos: int, n: int, depth: int) -> tuple[list[Any], int]:
    if n > len(buf) - pos:
        raise MsgpackError(f"array of {n} items cannot fit in {len(buf) - pos} bytes")
    out = []
    for _ in range(n):
        v, pos = _decode(buf, pos, depth + 1)
        out.append(v)
    return out, pos


def _map(buf: bytes, pos: int, n: int, depth: int) -> tuple[dict[Any, Any], int]:
    if 2 * n > len(buf) - pos:
        raise MsgpackError(f"map of {n} pairs cannot fit in {len(buf) - pos} bytes")
    out: dict[Any, Any] = {}
    for _ in range(n):
        k, pos = _decode(buf, pos, depth + 1)
        v, pos = _decode(buf, pos, depth + 1)
        if isinstance(k, list | dict):
            raise MsgpackError("map key is a container")
        out[k if not isinstance(k, bytes | bytearray) else bytes(k)] = v
    return out, pos
