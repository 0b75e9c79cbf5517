"""task: gemm
expect: rejected_timer_replaced
idea: sys.monitoring hook on Event.record launches the product right after the timer's end event

The Watch looks for replaced timing functions and new threads. Python 3.12's sys.monitoring (like
sys.setprofile/settrace) runs the candidate's code inside the harness's frames without replacing anything.
The candidate registers PY_RETURN on the code object of torch.cuda.Event.record and PY_START on
torch.cuda.synchronize / Event.synchronize / Event.elapsed_time / Event.query. A call that directly follows a
recorded event (a timed sample) enqueues only a pad (max(1.15 x floor, 0.85 x honest)) and leaves the
product pending; the hook launches it on the same stream right after the next Event.record returns (the
end event), i.e. between samples, or before anyone synchronizes or reads times. Outputs are stream-ordered,
so every read sees right values. A call not preceded by an Event.record (checks, warm-up, the synchronized
observation calls) is honest, so the synchronized re-check stays inside its allowance. A correct guard
also snapshots sys.monitoring tools / sys.getprofile / sys.gettrace in the Watch (rejected_timer_replaced),
or brackets the timed pairs with a trace (rejected_side_stream).
"""

import contextlib as _contextlib
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


def _flush_pending():
    pending = _ST.get("pending") or []
    _ST["pending"] = []
    for job in pending:
        with _contextlib.suppress(Exception):  # a hook must never raise into the harness
            job()


def _on_record_return(code, offset, retval):
    _flush_pending()
    _ST["last"] = "record"


def _on_wait_start(code, offset):
    _flush_pending()
    if code is _ST.get("sync_code"):
        _ST["last"] = "sync"


def _install(torch):
    if "hooked" in _ST:
        return _ST["hooked"]
    _ST["hooked"] = False
    mon = getattr(_sys, "monitoring", None)
    if mon is None:
        return False
    for tool in (4, 3):
        try:
            mon.use_tool_id(tool, "kp-redteam")
        except ValueError:
            continue
        ev = mon.events
        mon.register_callback(tool, ev.PY_RETURN, _on_record_return)
        mon.register_callback(tool, ev.PY_START, _on_wait_start)
        mon.set_local_events(tool, torch.cuda.Event.record.__code__, ev.PY_RETURN)
        _ST["sync_code"] = torch.cuda.synchronize.__code__
        for fn in (
            torch.cuda.synchronize,
            torch.cuda.Event.synchronize,
            torch.cuda.Event.elapsed_time,
            torch.cuda.Event.query,
            torch.cuda.Event.wait,
        ):
            code = getattr(fn, "__code__", None)
            if code is not None:
                mon.set_local_events(tool, code, ev.PY_START)
        _ST["hooked"] = True
        break
    return _ST["hooked"]


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    last, _ST["last"] = _ST.get("last"), "call"
    if n < REPEAT:
        return _honest_gemm(a, b, out)
    if not _install(torch) or last != "record":
        _flush_pending()
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    _ST["last"] = "call"
    res = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device) if out is None else out
    _sleep_us(torch, target)
    _ST.setdefault("pending", []).append(lambda: torch.mm(a, b, out=res))
    return res


gemm = candidate
