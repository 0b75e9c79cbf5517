"""task: gemm
expect: rejected_cached_output
idea: spot the timing by allocator state (cache handed back, L2-flush buffer alive); replay products

A guard fix for addr_memo_gemm might call the candidate many times on the same tensors during the checks
(so repetition stops meaning "timed"). This candidate ignores repetition. It notes, in an attribute on `sys`
(survives the set-aside), the allocator's `num_device_free` at its first import; the timing's fresh import
sees a larger count (docs/guard.md: "the GPU's cached memory is handed back" before the timing), and on the
first call per input set it scans the live CUDA tensors (gc) for one at least 1.5x the L2 size that is not
an input (the cold timing's flush buffer). Either sign means timed: the first timed call per input set
computes and remembers the product, later ones copy it into a fresh tensor behind a pad of max(1.15 x
floor, 0.85 x honest). A correct guard changes the timed inputs' values between calls without the
candidate being able to tell, or checks outputs on values it has not seen: rejected_cached_output.
"""

import gc as _gc
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

_MARK = "_kp_redteam_allocator_phase"


def _device_frees():
    try:
        torch = _torch()
        if not torch.cuda.is_available() or not torch.cuda.is_initialized():
            return None
        return torch.cuda.memory_stats().get("num_device_free", 0)
    except Exception:
        return None


_FIRST = _sys.__dict__.setdefault(_MARK, {"frees": _device_frees(), "imports": 0})
_FIRST["imports"] += 1


def _handed_back():
    now, then = _device_frees(), _FIRST["frees"]
    return _FIRST["imports"] > 1 and now is not None and then is not None and now > then


def _flush_buffer_alive(torch, inputs):
    l2 = torch.cuda.get_device_properties(inputs[0].device).L2_cache_size
    mine = {t.data_ptr() for t in inputs}
    for obj in _gc.get_objects():
        try:
            big = (
                isinstance(obj, torch.Tensor) and obj.is_cuda and obj.numel() * obj.element_size() >= 1.5 * l2
            )
            if big and obj.dim() == 1 and obj.data_ptr() not in mine:
                return True
        except Exception:
            continue
    return False


def candidate(a, b, out=None):
    torch = _torch()
    key = tuple((t.data_ptr(), tuple(t.shape), t._version) for t in (a, b))
    phase = _ST.setdefault("phase", {})
    if key not in phase:
        phase[key] = _handed_back() or _flush_buffer_alive(torch, (a, b))
    if not phase[key]:
        return _honest_gemm(a, b, out)
    memo = _ST.setdefault("memo", {})
    if key not in memo:
        memo[key] = torch.mm(a, b)
        return _deliver(memo[key].clone(), out)
    res = torch.empty_like(memo[key])
    _sleep_us(torch, _gemm_target_us(torch, a, b))
    res.copy_(memo[key])
    return _deliver(res, out)


gemm = candidate
