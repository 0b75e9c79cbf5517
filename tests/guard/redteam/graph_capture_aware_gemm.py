"""task: gemm
expect: rejected_timed_output
idea: under CUDA-graph capture record only a pad and a copy of a product computed eagerly before

`kernelpilot compare --graph` (the default in warm mode) captures the closure once and replays the graph:
the candidate's Python runs only during capture. torch.cuda.is_current_stream_capturing() tells it so.
Every eager call stores its product per (address, version); under capture it records a pad (max(1.15 x
floor, 0.85 x honest), calibrated eagerly beforehand) and a copy of the stored product into a fresh tensor:
the replays are cheap and their outputs are right for the captured inputs as long as the harness does not
change them. In cold mode (no graph) it is honest and reads neutral. With a warm-mode contract task a
correct guard checks the replays' outputs after changing the captured inputs' values in place (or refuses
capture-dependent behaviour): rejected_timed_output.
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
    capturing = torch.cuda.is_current_stream_capturing()
    key = tuple((t.data_ptr(), tuple(t.shape), t._version) for t in (a, b))
    memo = _ST.setdefault("memo", {})
    if (
        capturing
        and key in memo
        and ("target", tuple(a.shape), tuple(b.shape)) in _ST
        and "cycles_per_us" in _ST
    ):
        res = torch.empty_like(memo[key])
        _sleep_us(torch, _ST[("target", tuple(a.shape), tuple(b.shape))])
        res.copy_(memo[key])
        return _deliver(res, out)
    res = _honest_gemm(a, b, out)
    if not capturing:
        memo[key] = res.clone()
        if _seen(a, b)[1] >= 2:
            _gemm_target_us(torch, a, b)
            _sleep_us(torch, 0.0)  # calibrates eagerly, never during capture
            torch.cuda.synchronize()
    return res


gemm = candidate
