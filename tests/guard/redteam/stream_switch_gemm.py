"""task: gemm
expect: rejected_side_stream
idea: replace nothing: leave another stream current so the timer's end event marks only a pad

The Watch compares timing functions' identities; the current CUDA stream is state, not a function. In the
timing phase the call makes the harness's real stream wait for wherever the current stream is (so the
product starts after the flush and the start event), computes the product there, sleeps max(1.15 x floor,
0.85 x honest) on a second stream that waited only for the entry point, and returns with that second stream
set current (torch.cuda.set_stream). An `end.record()` without an explicit stream then marks the pad, not
the product; the next flush, the baseline's next call and its events also run on the second stream while
the product's tail still occupies the GPU. With explicit-stream events it degrades to honest. A correct
guard records events on a stream it owns, restores/asserts the current stream around every call, or traces
the timed pairs: rejected_side_stream (or rejected_timer_replaced for altering the timer's stream).
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


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    cur = torch.cuda.current_stream(a.device)
    if n < REPEAT:
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    if "real" not in _ST:
        _ST["real"] = cur
        _ST["fake"] = torch.cuda.Stream(device=a.device)
    real, fake = _ST["real"], _ST["fake"]
    if fake is not cur and fake.cuda_stream != cur.cuda_stream:
        fake.wait_stream(cur)
    if real.cuda_stream != cur.cuda_stream:
        real.wait_stream(cur)
    with torch.cuda.stream(real):
        res = torch.mm(a, b) if out is None else torch.mm(a, b, out=out)
    res.record_stream(real)
    with torch.cuda.stream(fake):
        _sleep_us(torch, target)
    torch.cuda.set_stream(fake)
    return res


gemm = candidate
