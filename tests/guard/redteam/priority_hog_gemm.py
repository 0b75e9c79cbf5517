"""task: gemm
expect: rejected_side_stream
idea: honest high-priority product, then a low-priority SM/bandwidth hog that slows the next sample

Paired ABBA timing assumes each side's work is confined to its own sample. After its honest product (on a
high-priority stream the timed stream waits for, so its own time is honest and above the floor), each timed
call enqueues on a priority-0 side stream a ~1.2x-GEMM-long memory-bound hog (an in-place scale of a 384 MB
buffer, thousands of short blocks) that starts when the product ends. The next sample (the baseline's in
B->A and after block ends; its own in B->B, where its high priority gets SMs first) shares the GPU with the
hog, so the baseline reads slower. The hog runs only in samples that directly follow a recorded event
(sys.monitoring on torch.cuda.Event.record; fallback: the timed stream is still busy with the L2 flush at
entry), so the synchronized observation calls see the honest product only. A correct guard attributes
work launched by a side to that side whatever stream or sample it lands in (trace the timed pairs; drain
all streams between samples and charge the drain): rejected_side_stream.
"""

import sys as _sys

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


def _on_record_return(code, offset, retval):
    _ST["last"] = "record"


def _install(torch):
    if "hooked" in _ST:
        return _ST["hooked"]
    _ST["hooked"] = False
    mon = getattr(_sys, "monitoring", None)
    if mon is None:
        return False
    for tool in (4, 3):
        try:
            mon.use_tool_id(tool, "kp-redteam-hog")
        except ValueError:
            continue
        mon.register_callback(tool, mon.events.PY_RETURN, _on_record_return)
        mon.set_local_events(tool, torch.cuda.Event.record.__code__, mon.events.PY_RETURN)
        _ST["hooked"] = True
        break
    return _ST["hooked"]


def _timed_sample(torch, main):
    last = _ST.get("last")
    if _install(torch):
        return last == "record"
    return not main.query()


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    main = torch.cuda.current_stream(a.device)
    timed = n >= REPEAT and _timed_sample(torch, main)
    _ST["last"] = "call"
    if not timed:
        return _honest_gemm(a, b, out)
    if "hi" not in _ST:
        _ST["hi"] = torch.cuda.Stream(device=a.device, priority=-1)
        _ST["lo"] = torch.cuda.Stream(device=a.device, priority=0)
        _ST["hog"] = torch.empty(96 * 2**20, dtype=torch.float32, device=a.device).fill_(1.0)
        _ST["last"] = "call"
    hi, lo, hog = _ST["hi"], _ST["lo"], _ST["hog"]
    hi.wait_stream(main)
    with torch.cuda.stream(hi):
        res = torch.mm(a, b) if out is None else torch.mm(a, b, out=out)
    res.record_stream(hi)
    main.wait_stream(hi)
    lo.wait_stream(hi)
    with torch.cuda.stream(lo):
        hog.mul_(1.0)  # 384 MB read + written: ~240 us of short blocks at the H100's bandwidth
    return res


gemm = candidate
