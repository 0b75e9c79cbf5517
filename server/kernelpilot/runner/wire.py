"""The wire between the judge and a runner: length-prefixed JSON messages over two pipes, and the layout
of the shared arena (where each slot's input and output arrays lie).

Both sides import it; it holds no state. A message is a 4-byte little-endian length and that many bytes
of UTF-8 JSON; its size is capped (`MAX_MESSAGE`) so a runner that writes garbage into its reply pipe
cannot make the judge allocate without bound.
"""

from __future__ import annotations

import json
import os
import select
import struct
import time
from typing import Any

HEADER = struct.Struct("<I")
MAX_MESSAGE = 8 * 2**20


class WireError(Exception):
    """The other side closed its pipe, sent a malformed message or missed its deadline."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


def send(fd: int, obj: Any) -> None:
    data = json.dumps(obj, separators=(",", ":")).encode()
    view = memoryview(HEADER.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise WireError("no reply before the deadline", timeout=True)
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise WireError("the pipe was closed (the process exited)")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def recv(fd: int, deadline: float | None = None) -> Any:
    """One message; `deadline` is a `time.monotonic()` instant (None: wait for ever)."""
    (n,) = HEADER.unpack(_read_exact(fd, HEADER.size, deadline))
    if n > MAX_MESSAGE:
        raise WireError(f"a message of {n} bytes is over the {MAX_MESSAGE}-byte cap")
    try:
        return json.loads(_read_exact(fd, n, deadline))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WireError(f"a malformed message: {exc}") from exc


# An array in the arena: {"offset": bytes from the arena's start, "dtype": torch/numpy dtype name without
# the module ("float32", "bfloat16", "int64", "bool"), "shape": [sizes]}. A slot: {"inputs": [array...],
# "outputs": [array...]}: one input set and the output arrays the candidate's result is copied into.
ALIGN = 64


def aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def view(arena: Any, lib: str, spec: dict[str, Any]) -> Any:
    """The array `spec` describes, as a torch tensor or numpy array over the arena's memory (no copy)."""
    shape = tuple(int(s) for s in spec["shape"])
    count = 1
    for s in shape:
        count *= s
    if lib == "torch":
        import torch

        dtype = getattr(torch, spec["dtype"])
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(arena, dtype=dtype, count=count, offset=int(spec["offset"])).view(shape)
    import numpy as np

    return np.frombuffer(arena, dtype=spec["dtype"], count=count, offset=int(spec["offset"])).reshape(shape)
