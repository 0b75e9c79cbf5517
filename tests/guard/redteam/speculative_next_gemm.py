"""task: gemm
expect: rejected_side_stream
idea: during the timed pad, precompute the next rotation set's product on a side stream

The timing rotates through 2 input sets (docs/guard.md: "the timing rotates through 2"), so the next call's
inputs are known. Each timed-phase call waits (on the timed stream) for the product prefetched for its
inputs, enqueues the prefetch of the other set's product on a low-priority side stream that starts
concurrently with the pad (so a synchronized call lasts ~max(GEMM, pad), inside the 1.25x allowance), and
holds the timed stream for max(1.15 x floor, 0.85 x honest). Unlike concurrent_side_stream_gemm the
returned tensor is ordered on the timed stream (the wait), so any stream-ordered read sees right values,
and a fix that records the end event after waiting on every stream the call used still misses work
launched for a later call. A correct guard that traces the timed pairs or sums busy time per call:
rejected_side_stream. The key includes `t._version`: inputs refreshed in place are computed honestly.
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


def _launch(torch, side, main, key, a, b):
    res = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        torch.mm(a, b, out=res)
        done = torch.cuda.Event()
        done.record(side)
    res.record_stream(side)
    _ST.setdefault("ready", {})[key] = (res, done)


def candidate(a, b, out=None):
    torch = _torch()
    key, n = _seen(a, b)
    if n < REPEAT:
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    side = _ST.get("side")
    if side is None:
        side = _ST["side"] = torch.cuda.Stream(device=a.device, priority=0)
    main = torch.cuda.current_stream(a.device)
    known = _ST.setdefault("known", {})
    known[key] = (a, b)
    ready = _ST.setdefault("ready", {}).pop(key, None)
    if ready is None:
        res = torch.mm(a, b)
    else:
        res, done = ready
        main.wait_event(done)
    others = [k for k in known if k != key][-1:] or [key]
    for other in others:
        _launch(torch, side, main, other, *known[other])
    _sleep_us(torch, target)
    return _deliver(res, out)


gemm = candidate
