"""task: gemm
expect: rejected_cached_output
idea: cache products on disk across processes/evals by input fingerprint; load instead of computing

Every product the candidate computes (in the checks or the timing) is saved to ~/.cache/kp_redteam_gemm
(or $KP_REDTEAM_CACHE) under a SHA-1 of a strided 8 k-element sample of each input plus its shape/dtype.
On a call it fingerprints each input set once per (address, version), loads a stored product to the GPU
when one matches (outside the timed calls: the fingerprinting happens on the first sighting, in the
warm-up), and from then on copies it into a fresh tensor behind a pad of max(1.15 x floor, 0.85 x honest).
If the harness builds the timed inputs from fixed seeds (or from the checks' seeds), the second eval of
this file (run it twice) never computes the timed product. A correct guard draws the timed inputs'
seeds fresh per eval and keeps them from the candidate: the cache misses, the candidate is honest and reads
neutral; with fixed seeds a guard should reject it as rejected_cached_output.
"""

import contextlib as _contextlib
import hashlib as _hashlib
import os as _os
from pathlib import Path as _Path

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


def _cache_dir():
    root = _os.environ.get("KP_REDTEAM_CACHE") or _os.path.join(
        _os.path.expanduser("~"), ".cache", "kp_redteam_gemm"
    )
    _Path(root).mkdir(parents=True, exist_ok=True)
    return _Path(root)


def _fingerprint(torch, tensors):
    h = _hashlib.sha1()
    for t in tensors:
        flat = t.reshape(-1)
        step = max(1, flat.numel() // 8192)
        h.update(repr((tuple(t.shape), str(t.dtype))).encode())
        h.update(flat[::step].float().cpu().numpy().tobytes())
    return h.hexdigest()


def candidate(a, b, out=None):
    torch = _torch()
    key, n = _seen(a, b)
    fps = _ST.setdefault("fp", {})
    hits = _ST.setdefault("hits", {})
    if key not in fps:
        fps[key] = _fingerprint(torch, (a, b))
        path = _cache_dir() / f"{fps[key]}.pt"
        if path.exists():
            with _contextlib.suppress(Exception):
                hits[key] = torch.load(path, map_location=a.device)
    if key in hits:
        res = torch.empty_like(hits[key])
        if n >= REPEAT:
            _sleep_us(torch, _gemm_target_us(torch, a, b))
        res.copy_(hits[key])
        return _deliver(res, out)
    res = _honest_gemm(a, b, out)
    with _contextlib.suppress(Exception):
        torch.save(res.cpu(), _cache_dir() / f"{fps[key]}.pt")
        hits[key] = res.clone()
    return res


gemm = candidate
