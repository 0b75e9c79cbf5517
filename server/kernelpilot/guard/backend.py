"""Array operations the semantic checks need, for numpy arrays (CPU contracts) and torch tensors.

Why two: the checks are the same whether a contract's inputs are numpy arrays on the host or torch
tensors on a GPU; everything touching values goes through one `Backend` so `semantic` stays one code path.
Comparisons run in float64 on the inputs' own device (no copy of a large output to the host).
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

# Bytes of each element size whose all-ones pattern is the poison: 0xFF.. is a NaN in every IEEE float
# format (all exponent bits set, non-zero mantissa), so an unwritten element cannot pass a value check,
# and it differs from the canonical NaN a computation produces, so it names "not written".
POISON_BYTE = 0xFF
FINGERPRINT_POINTS = 256  # sampled output values a timing process reports of its timed calls
SAME_SIZE = 4  # poisoned free blocks of exactly the output's size left in the allocator before a call


class Backend:
    name = "?"
    xp: Any = None

    def real_problem(self, x: Any, device: str) -> str:
        """Why `x` is not a plain array/tensor with real storage on the device ("" when it is)."""
        raise NotImplementedError

    def dtype_name(self, x: Any) -> str:
        """kernelpilot's name of the array's dtype (`roofline.ops.canonical_dtype`), the same for numpy and
        torch since both print their dtypes in a form it reads."""
        from kernelpilot.roofline.errors import UnknownDtypeError
        from kernelpilot.roofline.ops import canonical_dtype

        try:
            return canonical_dtype(str(x.dtype))
        except UnknownDtypeError:  # bool, complex, ...: shown as the library spells it
            return str(x.dtype)

    def to_bytes(self, x: Any) -> bytes:
        raise NotImplementedError

    def f64(self, x: Any) -> Any:
        raise NotImplementedError

    def clone(self, x: Any) -> Any:
        raise NotImplementedError

    def poison(self, x: Any) -> None:
        raise NotImplementedError

    def poisoned_count(self, x: Any) -> int:
        raise NotImplementedError

    def empty(self, like: Any, dtype: str) -> Any:
        raise NotImplementedError

    def scribble(self, nbytes: int) -> None:
        """Fill freed allocator memory with the poison so an uninitialised output holds it."""

    def sync(self) -> None:
        """Wait for all device work (every stream) before reading values."""

    def digest(self, x: Any) -> str:
        return hashlib.sha256(self.to_bytes(x)).hexdigest()

    def is_float(self, x: Any) -> bool:
        raise NotImplementedError

    def fingerprint(self, x: Any, k: int = FINGERPRINT_POINTS) -> list[float]:
        """float64 values of `x` at k evenly spaced flat positions (the shape's element count first)."""
        flat = self.f64(x).reshape(-1)
        n = int(flat.shape[0])
        if n == 0:
            return [0.0]
        idx = positions(n, k)
        picked = flat[self.index(idx, x)]
        return [float(n), *(float(v) for v in picked.tolist())]

    def index(self, idx: list[int], like: Any) -> Any:
        return idx

    # ---- fresh values and sampled outputs under the timer (`guard.timed.TimedCall`) ----

    def numel(self, x: Any) -> int:
        return int(x.numel()) if callable(getattr(x, "numel", None)) else int(x.size)

    def cat_flat(self, xs: list[Any]) -> Any:
        """The arrays' values one after the other, flat, in their own dtype (a pool of input values)."""
        raise NotImplementedError

    def write_window(self, x: Any, pool: Any, offset: int) -> None:
        """Overwrite `x` in place (same buffer) with the pool's values from `offset`."""
        raise NotImplementedError

    def window(self, pool: Any, offset: int, like: Any) -> Any:
        """The pool's values from `offset`, shaped like `like` (a view)."""
        return pool[offset : offset + self.numel(like)].reshape(tuple(like.shape))

    def ring(self, out: Any, rows: int, points: int) -> Any:
        """A (rows, points) buffer in the output's dtype for sampled outputs."""
        raise NotImplementedError

    def take_into(self, out: Any, idx: Any, ring: Any, row: int) -> None:
        """Sampled positions of `out` (flat, row-major) into `ring[row]`, on the device's stream."""
        raise NotImplementedError

    def sample_at(self, x: Any, pos: list[int]) -> list[float]:
        """The element count of `x`, then its float64 values at flat positions `pos`."""
        flat = self.f64(x).reshape(-1)
        return [float(self.numel(x)), *(float(v) for v in flat[self.index(pos, x)].tolist())]

    def device_us(self, fn: Any, reps: int = 8) -> float:
        """Time per call of `fn` where it runs (the host here; the GPU stream for torch on a GPU)."""
        import time

        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) * 1e6 / reps

    def rows_f64(self, ring: Any, rows: list[int]) -> list[list[float]]:
        return [[float(v) for v in r] for r in self.f64(ring[self.index(rows, ring)]).tolist()]


def positions(n: int, k: int = FINGERPRINT_POINTS) -> list[int]:
    """The k evenly spaced flat positions `Backend.fingerprint` samples."""
    return sorted({(i * n) // k for i in range(k)})


def random_positions(n: int, rng: Any, k: int = FINGERPRINT_POINTS) -> list[int]:
    """k distinct flat positions drawn at random (all of them when there are fewer): what the timing
    samples of every timed call, so a candidate cannot compute only the positions a fixed scheme reads."""
    return list(range(n)) if n <= k else sorted(rng.sample(range(n), k))


class NumpyBackend(Backend):
    name = "numpy"

    def __init__(self) -> None:
        import numpy

        self.xp = numpy

    def real_problem(self, x: Any, device: str) -> str:
        np = self.xp
        if type(x) is not np.ndarray:
            return f"output is a {type(x).__module__}.{type(x).__qualname__}, not a plain numpy.ndarray"
        return ""

    def to_bytes(self, x: Any) -> bytes:
        return bytes(self.xp.ascontiguousarray(x).tobytes())

    def f64(self, x: Any) -> Any:
        return self.xp.asarray(x, dtype=self.xp.float64)

    def clone(self, x: Any) -> Any:
        return self.xp.array(x, copy=True)

    def poison(self, x: Any) -> None:
        x.view(self.xp.uint8).fill(POISON_BYTE)

    def poisoned_count(self, x: Any) -> int:
        np = self.xp
        ints = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
        v = np.ascontiguousarray(x).view(ints[x.dtype.itemsize])
        return int((v == -1).sum())

    def empty(self, like: Any, dtype: str) -> Any:
        return self.xp.empty(like.shape, dtype=_np_dtype(self.xp, dtype))

    def scribble(self, nbytes: int) -> None:
        block = self.xp.empty(max(nbytes, 1), dtype=self.xp.uint8)
        block.fill(POISON_BYTE)
        del block

    def is_float(self, x: Any) -> bool:
        return bool(self.xp.issubdtype(x.dtype, self.xp.floating))

    def cat_flat(self, xs: list[Any]) -> Any:
        return self.xp.concatenate([self.xp.ravel(x) for x in xs])

    def write_window(self, x: Any, pool: Any, offset: int) -> None:
        x[...] = self.window(pool, offset, x)

    def ring(self, out: Any, rows: int, points: int) -> Any:
        return self.xp.empty((rows, points), dtype=out.dtype)

    def take_into(self, out: Any, idx: Any, ring: Any, row: int) -> None:
        ring[row] = self.xp.take(out, idx)

    def index(self, idx: list[int], like: Any) -> Any:
        return self.xp.asarray(idx, dtype=self.xp.int64)


def _np_dtype(np: Any, dtype: str) -> Any:
    return {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}[dtype]


class TorchBackend(Backend):
    def __init__(self, device: str) -> None:
        import importlib

        self.xp = importlib.import_module("torch")
        self.device = device
        self.name = f"torch:{device}"

    def real_problem(self, x: Any, device: str) -> str:
        torch = self.xp
        if type(x) is not torch.Tensor:
            return (
                f"output is a {type(x).__module__}.{type(x).__qualname__}, not a plain torch.Tensor "
                "(subclasses and lazy objects are refused)"
            )
        if x.is_meta or x.layout != torch.strided:
            return "output has no real storage (meta or non-strided tensor)"
        if x.device.type != torch.device(device).type:
            return f"output is on {x.device}, not the declared device {device}"
        if x.numel() > 0 and x.untyped_storage().data_ptr() == 0:
            return "output storage has no memory behind it"
        return ""

    def to_bytes(self, x: Any) -> bytes:
        t = x.detach().contiguous().view(self.xp.uint8) if x.numel() else x.detach()
        return bytes(t.cpu().numpy().tobytes())

    def digest(self, x: Any) -> str:
        """A checksum computed on the device (no copy of a large tensor to the host): the bytes as int64
        words, their plain and two position-weighted sums (wrapping), with the shape and dtype."""
        torch = self.xp
        raw = x.detach().contiguous().view(-1).view(torch.uint8)
        pad = (-raw.numel()) % 8
        if pad:
            raw = torch.cat([raw, torch.zeros(pad, dtype=torch.uint8, device=raw.device)])
        words = raw.view(torch.int64)
        pos = torch.arange(1, words.numel() + 1, dtype=torch.int64, device=words.device)
        sums = torch.stack([words.sum(), (words * pos).sum(), ((words >> 13) * (pos * 2654435761)).sum()])
        return f"{tuple(x.shape)}:{x.dtype}:" + ",".join(str(int(v)) for v in sums.tolist())

    def f64(self, x: Any) -> Any:
        return x.detach().to(self.xp.float64)

    def index(self, idx: list[int], like: Any) -> Any:
        return self.xp.tensor(idx, dtype=self.xp.int64, device=like.device)

    def clone(self, x: Any) -> Any:
        return x.detach().clone()

    def poison(self, x: Any) -> None:
        x.view(self.xp.uint8).fill_(POISON_BYTE)

    def poisoned_count(self, x: Any) -> int:
        torch = self.xp
        ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}
        v = x.detach().contiguous().view(ints[x.element_size()])
        return int((v == -1).sum().item())

    def empty(self, like: Any, dtype: str) -> Any:
        return self.xp.empty(tuple(like.shape), dtype=_torch_dtype(self.xp, dtype), device=self.device)

    def scribble(self, nbytes: int) -> None:
        """Empty the caching allocator, then leave it holding only poisoned free blocks: one of twice the
        output's size (plus slack) and a few of exactly its size, so whatever the candidate allocates for
        its output next (best fit, large or small pool) starts as poison, never as an old result."""
        torch = self.xp
        if self.device == "cpu":
            return
        torch.cuda.empty_cache()
        blocks = [
            torch.empty(max(nbytes, 1), dtype=torch.uint8, device=self.device) for _ in range(SAME_SIZE)
        ]
        blocks.append(torch.empty(2 * nbytes + (1 << 20), dtype=torch.uint8, device=self.device))
        for b in blocks:
            b.fill_(POISON_BYTE)
        self.sync()
        del blocks  # back to the caching allocator, poisoned

    def sync(self) -> None:
        if self.device != "cpu":
            self.xp.cuda.synchronize()

    def is_float(self, x: Any) -> bool:
        return bool(x.is_floating_point())

    def cat_flat(self, xs: list[Any]) -> Any:
        return self.xp.cat([x.detach().reshape(-1) for x in xs])

    def write_window(self, x: Any, pool: Any, offset: int) -> None:
        x.copy_(self.window(pool, offset, x))

    def ring(self, out: Any, rows: int, points: int) -> Any:
        return self.xp.empty((rows, points), dtype=out.dtype, device=out.device)

    def take_into(self, out: Any, idx: Any, ring: Any, row: int) -> None:
        self.xp.take(out.detach(), idx, out=ring[row])

    def device_us(self, fn: Any, reps: int = 8) -> float:
        if self.device == "cpu":
            return super().device_us(fn, reps)
        cuda = self.xp.cuda
        cuda.synchronize()
        start, end = cuda.Event(enable_timing=True), cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) * 1000.0 / reps


def _torch_dtype(torch: Any, dtype: str) -> Any:
    return {
        "fp64": torch.float64,
        "fp32": torch.float32,
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
    }[dtype]


def fingerprint_of(x: Any) -> list[float | None] | None:
    """The fingerprint of a timed call's output (None when it is not an array/tensor); a non-finite value
    is None (JSON has no NaN or infinity: the timing process reports it, the judge counts it as wrong)."""
    mod = type(x).__module__.split(".")[0]
    if mod == "torch" and type(x).__name__ == "Tensor":
        got = TorchBackend(str(x.device)).fingerprint(x)
    elif mod == "numpy" and type(x).__name__ == "ndarray":
        got = NumpyBackend().fingerprint(x)
    else:
        return None
    return [v if math.isfinite(v) else None for v in got]


def backend_for(sample: Any, device: str) -> Backend:
    """The backend of the contract's inputs (numpy arrays or torch tensors)."""
    mod = type(sample).__module__.split(".")[0]
    if mod == "torch":
        return TorchBackend(device)
    return NumpyBackend()
