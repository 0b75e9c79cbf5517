"""task: gemm
expect: rejected_thread
idea: a pthread_create (ctypes) worker, invisible to threading, launches each product after the pad

docs/guard.md, Limits: "Threads are seen when started through threading ...; a thread started by native code
is not." ctypes' CFUNCTYPE callbacks take the GIL by themselves, so a pthread started from libc runs Python
that threading.enumerate() and _thread._count() never list (fallback: _thread.start_new_thread, which
threading.enumerate() does not list either). In the timing phase the call enqueues only the pad (max(1.15 x
floor, 0.85 x honest)), records an event after it and hands (inputs, output, event, stream) to the worker;
the worker waits for the event on the host (the pad has run, so the end event is recorded by then) and
enqueues the product on the same stream: after the timed window, before any later stream-ordered read. In
the synchronized observation calls the product is launched after the closing synchronize returns, so it
also escapes the re-check. sys.setswitchinterval(1e-5) makes the hand-over prompt. A correct guard counts
OS threads (/proc/self/task) rather than Python threads: rejected_thread.
"""

import _thread
import collections as _collections
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

_JOBS: "_collections.deque" = _collections.deque()


def _worker(_arg=None):
    torch = _torch()
    while True:
        _ST["ready"].acquire()  # a binary lock used as a doorbell; drain everything per ring
        while _JOBS:
            job = _JOBS.popleft()
            if job is None:
                _ST["stopped"] = True
                return 0
            a, b, res, ev, stream = job
            try:
                ev.synchronize()
                with torch.cuda.device(a.device), torch.cuda.stream(stream):
                    torch.mm(a, b, out=res)
            except Exception:
                pass


def _ring():
    lock = _ST["ready"]
    if lock.locked():
        with _contextlib.suppress(RuntimeError):
            lock.release()


def _stop():
    """Let the worker return before the interpreter finalizes (a foreign thread then would crash the exit)."""
    import time

    _JOBS.append(None)
    _ring()
    deadline = time.monotonic() + 2.0
    while not _ST.get("stopped") and time.monotonic() < deadline:
        time.sleep(0.001)
    time.sleep(0.01)  # the callback's return and GIL release


def _start_worker():
    if "ready" in _ST:
        return
    import atexit
    import ctypes

    _ST["ready"] = _thread.allocate_lock()
    _ST["ready"].acquire()
    _sys.setswitchinterval(1e-5)
    try:
        libc = ctypes.CDLL(None)
        proto = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)
        _ST["cb"] = proto(lambda arg: _worker(arg))  # keep the callback alive
        tid = ctypes.c_ulong()
        if libc.pthread_create(ctypes.byref(tid), None, _ST["cb"], None) != 0:
            raise OSError("pthread_create failed")
        _ST["how"] = "pthread_create"
    except Exception:
        _thread.start_new_thread(_worker, (None,))
        _ST["how"] = "_thread.start_new_thread"
    atexit.register(_stop)


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    if n < REPEAT:
        return _honest_gemm(a, b, out)
    target = _gemm_target_us(torch, a, b)
    _start_worker()
    stream = torch.cuda.current_stream(a.device)
    res = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device) if out is None else out
    _sleep_us(torch, target)
    ev = torch.cuda.Event()
    ev.record(stream)
    _JOBS.append((a, b, res, ev, stream))
    _ring()
    return res


gemm = candidate
