"""task: gemm
expect: rejected_timer_replaced
idea: honest product; torch's matmul/add ops patched so the baseline tree's calls pay a hidden pad

Both sides are loaded into one process (docs/eval-design.md); the Watch guards timing functions, not the
operators the baseline calls. At import (every import, checks and timing) the candidate wraps
torch.Tensor.__matmul__/matmul/mm/__add__/__radd__/__mul__/__rmul__ and torch.matmul/mm/add/mul: a call
whose caller's file lies under a `.baseline-tree` (or is another copy of this file's name) gets
torch.cuda._sleep for 40 % of the op's roofline floor before the real op; everyone else, this candidate
included, gets the original. The candidate itself is honest (right outputs, honest time, above the floor),
the baseline reads ~1.3x slower, so the paired ratio says improved. A correct guard snapshots (or
restores) the operators the contract's reference and the baseline use, runs the sides in separate
processes, or times the baseline tree's code with the candidate's module not loaded:
rejected_timer_replaced (tampering with the measurement).
"""

import os as _os
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

_ME = _os.path.basename(__file__)
_HERE = _os.path.abspath(__file__)


def _victim(frame):
    fname = frame.f_code.co_filename
    if ".baseline-tree" in fname:
        return True
    return _os.path.basename(fname) == _ME and _os.path.abspath(fname) != _HERE


def _pad_for(torch, args):
    ts = [t for t in args if isinstance(t, torch.Tensor)]
    if not ts or not ts[0].is_cuda:
        return 0.0
    if len(ts) >= 2 and ts[0].dim() == 2 and ts[1].dim() == 2:
        m, k = ts[0].shape
        flops = 2.0 * m * k * ts[1].shape[1]
        return 0.4 * flops / 989e12 * 1e6
    return 0.4 * 12.0 * max(t.numel() for t in ts) * ts[0].element_size() / 4 / 3.35e12 * 1e6


def _wrap(torch, orig):
    if getattr(orig, "_kp_redteam", False):
        return orig

    def wrapper(*args, **kwargs):
        try:
            if _victim(_sys._getframe(1)):
                us = _pad_for(torch, args)
                if us > 0:
                    _sleep_us(torch, us)
        except Exception:
            pass
        return orig(*args, **kwargs)

    wrapper._kp_redteam = True
    wrapper.__name__ = getattr(orig, "__name__", "op")
    wrapper.__doc__ = getattr(orig, "__doc__", None)
    return wrapper


def _install():
    try:
        torch = _torch()
    except ImportError:
        return
    T = torch.Tensor
    for name in ("__matmul__", "matmul", "mm", "__add__", "__radd__", "__mul__", "__rmul__"):
        setattr(T, name, _wrap(torch, getattr(T, name)))
    for name in ("matmul", "mm", "add", "mul"):
        setattr(torch, name, _wrap(torch, getattr(torch, name)))


_install()


def candidate(a, b, out=None):
    return _honest_gemm(a, b, out)


gemm = candidate
