"""The shared memory between the judge and one runner: an anonymous file (memfd) only the two hold.

Why anonymous: a named segment under /dev/shm could be opened by the other side's runner; a memfd is
reachable only through a descriptor, which the judge passes to its own runner alone (and a runner's
/proc/<pid>/fd is closed to its peers: kernelpilot.runner.sandbox). Each slot holds one input set and the
output arrays the candidate's result is copied into; the judge writes inputs and poisons outputs while the
runner is stopped, and reads outputs the same way.
"""

from __future__ import annotations

import mmap
import os
from typing import Any

from kernelpilot.runner.wire import aligned, view

POISON_BYTE = 0xFF  # all-ones: a NaN in every float format, -1 in every integer one (guard.backend)
DTYPE_NAMES = {"fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def dtype_name(x: Any) -> str:
    return str(x.dtype).rsplit(".", 1)[-1]


def is_array(x: Any) -> bool:
    return hasattr(x, "shape") and hasattr(x, "dtype") and hasattr(x, "reshape")


def nbytes(x: Any) -> int:
    if hasattr(x, "element_size"):
        return int(x.numel()) * int(x.element_size())
    return int(x.nbytes)


class Arena:
    def __init__(self, name: str) -> None:
        self.fd = os.memfd_create(f"kernelpilot-{name}", 0)
        self.size = 0
        self.map: mmap.mmap | None = None
        self.lib = "numpy"
        self.slots: list[dict[str, Any]] = []
        self.views: list[tuple[list[Any], list[Any]]] = []

    def ensure(self, size: int) -> None:
        if size > self.size:
            os.ftruncate(self.fd, size)
            self.map = mmap.mmap(self.fd, size)
            self.size = size

    def plan(
        self, inputs: list[Any], outputs: list[tuple[str, tuple[int, ...]]], n_slots: int, lib: str
    ) -> int:
        """Lay out `n_slots` slots like `inputs` (one input set) and `outputs` ((dtype name, shape) per
        output array); returns the bytes needed."""
        offset, slots = 0, []
        for _ in range(n_slots):
            ins: list[dict[str, Any]] = []
            for x in inputs:
                if not is_array(x):
                    ins.append({"value": x})
                    continue
                ins.append({"offset": offset, "dtype": dtype_name(x), "shape": list(x.shape)})
                offset += aligned(max(nbytes(x), 1))
            outs = []
            for dt, shape in outputs:
                outs.append({"offset": offset, "dtype": dt, "shape": list(shape)})
                offset += aligned(max(_count(shape) * _itemsize(lib, dt), 1))
            slots.append({"inputs": ins, "outputs": outs})
        self.ensure(max(offset, mmap.PAGESIZE))
        self.lib, self.slots = lib, slots
        assert self.map is not None
        self.views = [
            ([view(self.map, lib, a) if "offset" in a else a["value"] for a in s["inputs"]],
             [view(self.map, lib, a) for a in s["outputs"]])
            for s in slots
        ]  # fmt: skip
        return self.size

    def write(self, slot: int, inputs: list[Any]) -> None:
        for dst, src in zip(self.views[slot][0], inputs, strict=True):
            if is_array(src):
                _copy(self.lib, dst, src)

    def poison(self, slot: int) -> None:
        for out in self.views[slot][1]:
            _bytes(self.lib, out)[...] = POISON_BYTE

    def inputs(self, slot: int) -> list[Any]:
        return self.views[slot][0]

    def outputs(self, slot: int) -> list[Any]:
        return self.views[slot][1]

    def close(self) -> None:
        os.close(self.fd)


def _count(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _itemsize(lib: str, dt: str) -> int:
    if lib == "torch":
        import torch

        return int(getattr(torch, dt).itemsize)
    import numpy as np

    return int(np.dtype(dt).itemsize)


def _copy(lib: str, dst: Any, src: Any) -> None:
    if lib == "torch":
        dst.copy_(src.detach().cpu())
    else:
        import numpy as np

        np.copyto(dst, src)


def _bytes(lib: str, x: Any) -> Any:
    if lib == "torch":
        import torch

        return x.view(-1).view(torch.uint8) if x.numel() else x
    return x.reshape(-1).view("uint8")
