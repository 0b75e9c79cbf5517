"""task: gemm
expect: accepted
idea: honest product; a daemon threading.Thread started at import only logs the call count

A false-positive probe: the docs reject any thread started after the Watch began (rejected_thread), which
this candidate does at import. The thread holds no CUDA work, reads a counter, and writes a debug line
through `logging` (to nothing unless configured). Whether a guard should accept it is the lead's call: a
thread that cannot launch device work cannot move time out of the timer, but telling that from Python is
hard; if the guard keeps rejecting it, the docs should say so plainly (threads are forbidden, whatever they
do).
"""

import logging as _logging
import threading as _threading

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

_LOG = _logging.getLogger("kp_redteam.honest_thread")
_CALLS = [0]


def _logger(stop):
    while not stop.wait(1.0):
        _LOG.debug("calls so far: %d", _CALLS[0])


_STOP = _threading.Event()
_threading.Thread(target=_logger, args=(_STOP,), name="kp-honest-logger", daemon=True).start()


def candidate(a, b, out=None):
    _CALLS[0] += 1
    return _honest_gemm(a, b, out)


gemm = candidate
