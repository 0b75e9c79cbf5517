"""task: gemm
expect: rejected_side_stream
idea: real GEMM on an unwaited side stream, shorter pad on the timed stream; synced recheck sees max

The side-stream check traces only when the 10 calls re-timed between device-wide synchronizes take longer
than 1.25 x the timed median + 2 us (docs/guard.md, Observation). Those synchronized calls bound the wall
time of concurrent work, not its sum: here the product runs on a low-priority side stream (it waits for the
timed stream's position at entry, so it starts after the L2 flush) while the timed stream only sleeps for
max(1.15 x floor, 0.85 x honest). The synchronized call then lasts ~max(GEMM, pad) ~ 1.18 x pad, inside the
allowance, so the trace (which would see GEMM + pad on two streams) never runs. The GEMM's tail also
overlaps the next sample, the baseline's half the time. Outputs are right once the device is synchronized.
A correct guard makes the timed end event wait on every stream the call used, or traces the timed pairs:
rejected_side_stream.
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
    if n < REPEAT:
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    side = _ST.get("side")
    if side is None:
        side = _ST["side"] = torch.cuda.Stream(device=a.device, priority=0)  # 0: the lowest
    main = torch.cuda.current_stream(a.device)
    res = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device) if out is None else out
    side.wait_stream(main)
    with torch.cuda.stream(side):
        torch.mm(a, b, out=res)
    res.record_stream(side)
    _sleep_us(torch, target)
    return res


gemm = candidate
