"""task: gemm
expect: rejected_timed_output
idea: re-import marker tells timing from checks; compute only elements an evenly spaced sample reads

Two holes. (1) Phase: the checks import the candidate, the timing sets its modules aside and imports it
afresh in the same process (docs/guard.md, "Where each runs"); state outside the candidate's modules (here
an attribute on `sys`) survives, so the second import knows it is being timed. Pointer repetition is the
fallback for the unpaired path (one import per process). (2) The timed-output check samples "256 evenly
spaced positions": positions that are a fixed function of the output size. In the timing phase the
candidate computes only the elements at every plausible evenly-spaced scheme (i*N//256, linspace with
floor/round/ceil, their midpoints, a 16x16 row/column grid; ~1-2 k dot products) and leaves the rest
uninitialised, then pads the stream to max(1.15 x floor, 0.85 x honest). A correct guard samples positions
the candidate cannot predict (random per eval) or compares whole outputs: rejected_timed_output.
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

_MARK = "_kp_redteam_reimport_sampled"
TIMING_IMPORT = bool(getattr(_sys, _MARK, 0))  # a second import in one process: the timing's
setattr(_sys, _MARK, getattr(_sys, _MARK, 0) + 1)


def _positions(torch, rows, cols, device):
    total = rows * cols
    idx = set()
    for i in range(256):
        base = i * total // 256
        idx.update({base, min(total - 1, base + total // 512)})
        lin = i * (total - 1) / 255
        idx.update({int(lin), round(lin), min(total - 1, int(lin) + 1)})
    for r in range(16):
        for c in range(16):
            for rr in (r * rows // 16, round(r * (rows - 1) / 15)):
                for cc in (c * cols // 16, round(c * (cols - 1) / 15)):
                    idx.add(rr * cols + cc)
    idx.update({0, total - 1})
    return torch.tensor(sorted(idx), dtype=torch.long, device=device)


def candidate(a, b, out=None):
    torch = _torch()
    _key, n = _seen(a, b)
    if not (TIMING_IMPORT or n >= REPEAT):
        return _honest_gemm(a, b, out)
    m, n_cols = a.shape[0], b.shape[1]
    pkey = ("pos", m, n_cols)
    if pkey not in _ST:
        _ST[pkey] = _positions(torch, m, n_cols, a.device)
    pos = _ST[pkey]
    target = _gemm_target_us(torch, a, b)
    res = torch.empty(m, n_cols, dtype=a.dtype, device=a.device) if out is None else out
    rows, cols = pos // n_cols, pos % n_cols
    vals = (a.index_select(0, rows).float() * b.index_select(1, cols).t().float()).sum(1)
    res.view(-1).index_copy_(0, pos, vals.to(res.dtype))
    _sleep_us(torch, target)
    return res


gemm = candidate
