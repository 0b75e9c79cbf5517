"""Kernels of 1.5-16 µs for the cold-timing checks (issue 33), plus the probe's own null/spin/stamp kernels.

Why a module of its own: `bench/cold_probe.py`, its ncu child process and `bench/timing_vs_ncu.py` time the
same closures (`make_<name>`, a zero-argument launch closure each, as `kernelpilot time` takes them), and
`kernelpilot time` loads them by path (`bench/cold_probe_kernels.py:make_add_bf16_2m`).

- ISSUE_FIVE: the five kernels issue 33 was filed with (kept as a regression set);
- NEW_FIVE: five kernels written for the acceptance check (not in the test suite);
- PROBE: a null kernel (one block that does nothing) and two clock spins of known length.

Every CuPy kernel launches on torch's current stream (the timer's hold and graph capture use it).
Run as `python bench/cold_probe_kernels.py --ncu-child NAMES` it is the process ncu profiles: it builds and
warms every named closure, then between cudaProfilerStart/Stop launches each LAUNCHES times followed by one
`kp_marker` launch (the marker splits ncu's rows by kernel).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

ISSUE_FIVE = ("add_bf16_2m", "gather_64x4096", "gelu_bf16_4m", "rowsum_4096x1024", "triton_silu_mul_8m")
NEW_FIVE = ("saxpy_cupy_256k", "softmax_bf16_512x2048", "layernorm_bf16_2048", "triton_rmsnorm_2048x4096",
            "cast_f32_bf16_4m")  # fmt: skip
PROBE = ("null", "spin_2us", "spin_8us")
SPIN_MHZ = 1980.0  # H100/H200 maximum SM clock: the spin lasts `us` at that clock, longer below it
LAUNCHES = 15  # per kernel under ncu (the first 3 are dropped by the reader)

# Kernel-name patterns of each closure's kernel in activity traces and ncu (None: any non-flush kernel).
NAME_HINT: dict[str, str] = {
    "null": "kp_null",
    "spin_2us": "kp_spin",
    "spin_8us": "kp_spin",
    "saxpy_cupy_256k": "kp_saxpy",
    "triton_silu_mul_8m": "kp_silu_mul",
    "triton_rmsnorm_2048x4096": "kp_rmsnorm",
}

_CUDA_SRC = r"""
extern "C" __global__ void kp_null() {}
extern "C" __global__ void kp_marker(int* y) { if (threadIdx.x == 0 && y[0] == 123456789) y[1] = 1; }
extern "C" __global__ void kp_spin(long long cycles, int* sink) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) {}
    if (threadIdx.x == 0 && sink[0] == 123456789) sink[1] = 1;
}
extern "C" __global__ void kp_saxpy(const float* x, float* y, float a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i] * 0.5f;
}
extern "C" __global__ void kp_stamp(unsigned long long* buf, int i) {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    buf[i] = t;
}
extern "C" __global__ void kp_gt_res(unsigned long long* out, int n) {
    unsigned long long prev, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(prev));
    int k = 0;
    for (long long it = 0; it < (1LL << 26) && k < n; ++it) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        if (t != prev) { out[k++] = t - prev; prev = t; }
    }
}
"""

_MOD: Any = None


def cupy_module() -> tuple[Any, Any]:
    """(cupy, the RawModule of _CUDA_SRC), compiled once."""
    global _MOD
    import cupy

    if _MOD is None:
        _MOD = cupy.RawModule(code=_CUDA_SRC)
    return cupy, _MOD


def on_torch_stream(cupy: Any) -> Any:
    return cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)


def _rand(*shape: int, dtype: Any = torch.float32) -> Any:
    return torch.randn(*shape, device="cuda", dtype=dtype)


# ---- issue 33's five -------------------------------------------------------------------------------------
def make_add_bf16_2m() -> Callable[[], Any]:
    a, b = _rand(2 << 20, dtype=torch.bfloat16), _rand(2 << 20, dtype=torch.bfloat16)
    c = torch.empty_like(a)
    return lambda: torch.add(a, b, out=c)


def make_gather_64x4096() -> Callable[[], Any]:
    table = _rand(16384, 4096)
    idx = torch.randint(0, 16384, (64,), device="cuda")
    out = torch.empty(64, 4096, device="cuda")
    return lambda: torch.index_select(table, 0, idx, out=out)


def make_gelu_bf16_4m() -> Callable[[], Any]:
    x = _rand(4 << 20, dtype=torch.bfloat16)
    return lambda: torch.nn.functional.gelu(x)


def make_rowsum_4096x1024() -> Callable[[], Any]:
    x = _rand(4096, 1024)
    out = torch.empty(4096, device="cuda")
    return lambda: torch.sum(x, dim=1, out=out)


def _triton_silu_mul() -> Any:
    import triton
    import triton.language as tl

    @triton.jit
    def kp_silu_mul(a_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        a = tl.load(a_ptr + offs, mask=m).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=m).to(tl.float32)
        tl.store(y_ptr + offs, (a / (1.0 + tl.exp(-a)) * b).to(tl.bfloat16), mask=m)

    return triton, kp_silu_mul


def make_triton_silu_mul_8m() -> Callable[[], Any]:
    triton, kern = _triton_silu_mul()
    n = 8 << 20
    a, b = _rand(n, dtype=torch.bfloat16), _rand(n, dtype=torch.bfloat16)
    y = torch.empty_like(a)
    grid = (triton.cdiv(n, 2048),)
    return lambda: kern[grid](a, b, y, n, BLOCK=2048)


# ---- five new kernels for the acceptance check -----------------------------------------------------------
def make_saxpy_cupy_256k() -> Callable[[], Any]:
    import numpy as np

    cupy, mod = cupy_module()
    k = mod.get_function("kp_saxpy")
    n = 256 << 10
    x = cupy.random.rand(n, dtype=cupy.float32)
    y = cupy.random.rand(n, dtype=cupy.float32)
    a, nn = np.float32(1.5), np.int32(n)

    def run() -> None:
        with on_torch_stream(cupy):
            k((n // 256,), (256,), (x, y, a, nn))

    return run


def make_softmax_bf16_512x2048() -> Callable[[], Any]:
    x = _rand(512, 2048, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    return lambda: torch.softmax(x, dim=-1, out=y)


def make_layernorm_bf16_2048() -> Callable[[], Any]:
    x = _rand(2048, 2048, dtype=torch.bfloat16)
    w, b = _rand(2048, dtype=torch.bfloat16), _rand(2048, dtype=torch.bfloat16)
    return lambda: torch.nn.functional.layer_norm(x, (2048,), w, b)


def make_triton_rmsnorm_2048x4096() -> Callable[[], Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def kp_rmsnorm(x_ptr, w_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        m = offs < cols
        x = tl.load(x_ptr + row * cols + offs, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + offs, mask=m, other=0.0).to(tl.float32)
        r = tl.rsqrt(tl.sum(x * x, axis=0) / cols + eps)
        tl.store(y_ptr + row * cols + offs, (x * r * w).to(tl.bfloat16), mask=m)

    rows, cols = 2048, 4096
    x = _rand(rows, cols, dtype=torch.bfloat16)
    w = _rand(cols, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    return lambda: kp_rmsnorm[(rows,)](x, w, y, cols, 1e-6, BLOCK=4096)


def make_cast_f32_bf16_4m() -> Callable[[], Any]:
    x = _rand(4 << 20)
    y = torch.empty(4 << 20, device="cuda", dtype=torch.bfloat16)
    return lambda: y.copy_(x)


# ---- probe kernels -----------------------------------------------------------------------------------------
def make_null() -> Callable[[], Any]:
    cupy, mod = cupy_module()
    k = mod.get_function("kp_null")

    def run() -> None:
        with on_torch_stream(cupy):
            k((1,), (32,), ())

    return run


def _spin(us: float) -> Callable[[], Any]:
    import numpy as np

    cupy, mod = cupy_module()
    k = mod.get_function("kp_spin")
    cycles = np.int64(us * SPIN_MHZ)
    sink = cupy.zeros(2, dtype=cupy.int32)

    def run() -> None:
        with on_torch_stream(cupy):
            k((1,), (32,), (cycles, sink))

    return run


def make_spin_2us() -> Callable[[], Any]:
    return _spin(2.0)


def make_spin_8us() -> Callable[[], Any]:
    return _spin(8.0)


def make(name: str) -> Callable[[], Any]:
    fn: Callable[[], Callable[[], Any]] = globals()[f"make_{name}"]
    return fn()


def ncu_child(names: list[str]) -> None:
    """The process ncu profiles (see the module docstring)."""
    cupy, mod = cupy_module()
    marker = mod.get_function("kp_marker")
    sink = cupy.zeros(2, dtype=cupy.int32)
    fns = [make(n) for n in names]
    for fn in fns:
        for _ in range(3):
            fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for fn in fns:
        for _ in range(LAUNCHES):
            fn()
        with on_torch_stream(cupy):
            marker((1,), (32,), (sink,))
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--ncu-child":
        ncu_child(sys.argv[2].split(","))
    else:
        print("usage: python bench/cold_probe_kernels.py --ncu-child name1,name2,...", file=sys.stderr)
        sys.exit(2)
