"""task: gemm
expect: rejected_lazy_output
idea: in the timing return a Tensor subclass that computes the product on first read (the sampler)

rejected_lazy_output is a semantic check: the docs list it only for the checks, which run before anything is
timed. Once an input set repeats (the timing), the call enqueues only a calibrated pad (above the floor,
below the honest time) and returns `Deferred`, a subclass sharing an uninitialised buffer's storage; its
__torch_function__ runs torch.mm into that buffer on the first op other than metadata (shape, dtype, device,
stride, data_ptr, ...). The timed calls and the 10 synchronized observation calls only ever see the pad;
the sampler's first read (flatten, index, .cpu(), .double(), __dlpack__) materialises the right values. A
correct guard checks the timed outputs' type too (plain torch.Tensor, real values before the timer
stops): rejected_lazy_output.
"""


# ---- shared attack helpers (copied into every file so each file stands alone) ----

_ST: dict = {}
REPEAT = 8  # calls on the same input tensors before the attack assumes it is being timed
SPEEDUP = 0.85  # fraction of the honest time the attack shows the timer
FLOOR_MARGIN = 1.15  # stay this far above the roofline floor (rejected_impossible)


def _torch():
    import torch

    return torch


def _seen(*inputs):
    """How often these exact tensors (address, shape, version) were passed: the timing reuses them."""
    key = tuple((t.data_ptr(), tuple(t.shape), t._version) for t in inputs)
    seen = _ST.setdefault("seen", {})
    seen[key] = seen.get(key, 0) + 1
    return key, seen[key]


def _event_us(torch, fn, reps=3):
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3)
    return best


def _sleep_us(torch, us):
    """Hold the current stream for `us` microseconds (torch.cuda._sleep, calibrated once)."""
    rate = _ST.get("cycles_per_us")
    if rate is None:
        rate = _ST["cycles_per_us"] = 200_000 / _event_us(torch, lambda: torch.cuda._sleep(200_000))
    torch.cuda._sleep(max(1, int(us * rate)))


def _gemm_target_us(torch, a, b):
    """What the timer should read: below the honest GEMM, above the bf16 roofline floor."""
    key = ("target", tuple(a.shape), tuple(b.shape))
    if key not in _ST:
        m, k = a.shape
        n = b.shape[1]
        peak = 756e12 if "PCIe" in torch.cuda.get_device_name(a.device) else 989e12
        floor = 2.0 * m * n * k / peak * 1e6
        honest = _event_us(torch, lambda: torch.mm(a, b))
        _ST[key] = max(FLOOR_MARGIN * floor, SPEEDUP * honest)
    return _ST[key]


def _add_target_us(torch, x, y):
    key = ("target", tuple(x.shape))
    if key not in _ST:
        bw = 2.0e12 if "PCIe" in torch.cuda.get_device_name(x.device) else 3.35e12
        floor = 12.0 * x.numel() / bw * 1e6
        honest = _event_us(torch, lambda: x + 2 * y)
        _ST[key] = max(1.05 * floor, SPEEDUP * honest)
    return _ST[key]


def _honest_gemm(a, b, out=None):
    torch = _torch()
    if out is not None:
        return torch.mm(a, b, out=out)
    return torch.mm(a, b)


def _honest_add(x, y, out=None):
    torch = _torch()
    if out is not None:
        return torch.add(x, y, alpha=2, out=out)
    return x + 2 * y


def _deliver(res, out=None):
    if out is not None:
        out.copy_(res)
        return out
    return res


# ---- the attack ----


def _deferred_cls(torch):
    cls = _ST.get("deferred_cls")
    if cls is not None:
        return cls
    T = torch.Tensor
    passthru = {
        T.shape.__get__,
        T.dtype.__get__,
        T.device.__get__,
        T.ndim.__get__,
        T.is_cuda.__get__,
        T.size,
        T.dim,
        T.stride,
        T.numel,
        T.data_ptr,
        T.is_contiguous,
        T.storage_offset,
        T.element_size,
        T.__len__,
    }

    def _tensors(obj):
        if isinstance(obj, T):
            yield obj
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                yield from _tensors(o)
        elif isinstance(obj, dict):
            for o in obj.values():
                yield from _tensors(o)

    class Deferred(T):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in passthru:
                for t in _tensors((args, kwargs)):
                    thunk = t.__dict__.get("_kp_thunk") if hasattr(t, "__dict__") else None
                    if thunk is not None:
                        t.__dict__["_kp_thunk"] = None
                        thunk()
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)

    _ST["deferred_cls"] = Deferred
    return Deferred


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    if n < REPEAT or out is not None:
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    buf = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    lazy = torch.Tensor._make_subclass(_deferred_cls(torch), buf)
    lazy.__dict__["_kp_thunk"] = lambda: torch.mm(a, b, out=buf)
    _sleep_us(torch, target)
    return lazy


gemm = candidate
