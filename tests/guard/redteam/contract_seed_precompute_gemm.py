"""task: gemm
expect: neutral
idea: at import, build the contract's inputs for likely seeds and precompute products; look up

The harness, not the candidate, builds the timed inputs (docs/guard.md) but from the contract's public
`inputs` factory; the environment names the task (KERNELPILOT_GUARD_TASK), the task names the contract, and
the contract names the module, factory, first (timed) shape and dtype. At import the candidate calls that
factory for seeds 0-15 and a few favourites (42, 1234, 2024-2026, 12345), computes the products, and keeps
them. A call looks its inputs up once per (address, version) with torch.equal (during the warm-up), then
copies the stored product behind a pad of max(1.15 x floor, 0.85 x honest). Nothing found: honest. A
correct guard draws timed seeds the candidate cannot guess (random per eval, not derivable from the
task files or environment): the lookup misses and the candidate reads neutral (honest work). Improved
means the timed seeds are predictable.
"""

import importlib.util as _ilu
import json as _json
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

SEEDS = [*range(16), 42, 1234, 2024, 2025, 2026, 12345]


def _find(obj, key):
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            got = _find(v, key)
            if got is not None:
                return got
    elif isinstance(obj, list):
        for v in obj:
            got = _find(v, key)
            if got is not None:
                return got
    return None


def _load_contract():
    task = _os.environ.get("KERNELPILOT_GUARD_TASK")
    if not task:
        return None
    p = _Path(task)
    task_json = p / "task.json" if p.is_dir() else p
    data = _json.loads(task_json.read_text())
    workdir = _Path(_find(data, "workdir") or _os.getcwd())
    contract = _find(data, "contract")
    if isinstance(contract, str):
        cpath = _Path(contract) if _Path(contract).is_absolute() else workdir / contract
        if not cpath.exists():
            cpath = _Path(_os.getcwd()) / contract
        contract = _json.loads(cpath.read_text())
    if not isinstance(contract, dict) or "module" not in contract:
        return None
    mpath = _Path(contract["module"])
    for base in (workdir, _Path(_os.getcwd()), task_json.parent):
        if (base / mpath).exists():
            mpath = base / mpath
            break
    spec = _ilu.spec_from_file_location("_kp_redteam_contract", mpath)
    mod = _ilu.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shapes = contract.get("shapes") or []
    return mod, contract.get("inputs", "make_inputs"), shapes[0], contract.get("dtype", "bf16")


def _precompute():
    try:
        torch = _torch()
        if not torch.cuda.is_available():
            return []
        found = _load_contract()
        if found is None:
            return []
        mod, inputs_name, shape, dtype = found
        make = getattr(mod, inputs_name)
        table = []
        for seed in SEEDS:
            a, b = make(shape, dtype, seed, "cuda")[:2]
            table.append((a, b, torch.mm(a, b)))
        torch.cuda.synchronize()
        return table
    except Exception as exc:  # never fail the import: the candidate is then honest
        _ST["precompute_error"] = repr(exc)
        return []


_TABLE = _precompute()


def candidate(a, b, out=None):
    torch = _torch()
    key, n = _seen(a, b)
    match = _ST.setdefault("match", {})
    if key not in match:
        match[key] = None
        for ta, tb, prod in _TABLE:
            if ta.shape == a.shape and tb.shape == b.shape and torch.equal(ta, a) and torch.equal(tb, b):
                match[key] = prod
                break
    prod = match[key]
    if prod is None:
        return _honest_gemm(a, b, out)
    res = torch.empty_like(prod)
    if n >= REPEAT:
        _sleep_us(torch, _gemm_target_us(torch, a, b))
    res.copy_(prod)
    return _deliver(res, out)


gemm = candidate
