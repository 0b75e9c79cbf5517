"""task: add
expect: rejected_timed_output
idea: once inputs repeat, compute x + 2y only at positions an evenly spaced 256-sample can read

The timed-output check samples "256 evenly spaced positions" of the output (docs/guard.md, statuses table).
In the timing phase (same tensors passed REPEAT times) this writes the ~1.3 k elements of every plausible
evenly-spaced scheme (i*N//256, linspace floor/round/ceil, midpoints, ends) into an uninitialised output
and holds the stream for max(1.05 x floor, 0.85 x honest). The add is within ~2 % of its bandwidth floor on
an H100, so against the torch `x + 2*y` baseline this reads neutral/regressed (the floor is the defence);
against a baseline >= 1.2x the floor (e.g. a two-pass add) it reads improved unless the guard samples
positions it cannot predict or compares whole outputs: rejected_timed_output.
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


def _positions(torch, total, device):
    idx = set()
    for i in range(256):
        base = i * total // 256
        idx.update({base, min(total - 1, base + total // 512)})
        lin = i * (total - 1) / 255
        idx.update({int(lin), round(lin), min(total - 1, int(lin) + 1)})
    idx.update({0, total - 1})
    return torch.tensor(sorted(idx), dtype=torch.long, device=device)


def candidate(x, y, out=None):
    torch = _torch()
    _key, n = _seen(x, y)
    if n < REPEAT:
        return _honest_add(x, y, out)
    pkey = ("pos", x.numel())
    if pkey not in _ST:
        _ST[pkey] = _positions(torch, x.numel(), x.device)
    pos = _ST[pkey]
    target = _add_target_us(torch, x, y)
    res = torch.empty_like(x) if out is None else out
    xf, yf = x.reshape(-1), y.reshape(-1)
    res.view(-1).index_copy_(0, pos, xf.index_select(0, pos) + 2 * yf.index_select(0, pos))
    _sleep_us(torch, target)
    return res


add = candidate
