"""task: gemm
expect: rejected_timer_replaced
idea: honest product; an atexit hook rewrites the process's JSON result files to a 1.25x speed-up

docs/guard.md, Limits: the process runs the candidate's code and "can in principle forge anything that
process reports (the checks' report file, the timing's result file)". An atexit handler runs after the
process's main code has written its files. It collects paths from sys.argv, environment values, and
/proc/self/fd links opened by the process, plus JSON files modified in the last 10 minutes in those paths'
directories; in every JSON object holding "ratio_median" it scales the ratio, its CI, the candidate side's
("b_stats") median/samples by 0.8, sets speedup = 1/ratio and verdict "improved". It leaves the checks'
report alone (the honest candidate passed). A correct guard does not trust a file the candidate's process
can write after the candidate ran: e.g. the process leaves through os._exit right after writing, eval
cross-checks the samples against the summary, or the figures travel over a pipe eval holds and closes:
some rejection of the forgery (rejected_timer_replaced is the nearest family) or failed.
"""

import atexit as _atexit
import contextlib as _contextlib
import json as _json
import os as _os
import sys as _sys
import time as _time
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

FACTOR = 0.8


def _paths():
    seen = set()
    cands = list(_sys.argv[1:]) + list(_os.environ.values())
    try:
        for fd in _os.listdir("/proc/self/fd"):
            with _contextlib.suppress(OSError):
                cands.append(_os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        pass
    for c in cands:
        for part in str(c).replace("=", " ").replace(":", " ").split():
            p = _Path(part)
            try:
                if p.is_file() and p.suffix == ".json":
                    seen.add(p)
                    base = p.parent
                elif p.is_dir() and p != _Path("/"):
                    base = p
                else:
                    continue
                now = _time.time()
                for q in base.glob("*.json"):
                    if now - q.stat().st_mtime < 600:
                        seen.add(q)
            except OSError:
                continue
    return seen


def _scale(obj):
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return obj * FACTOR
    if isinstance(obj, list):
        return [_scale(v) for v in obj]
    if isinstance(obj, dict):
        return {k: _scale(v) for k, v in obj.items()}
    return obj


def _forge(obj):
    if isinstance(obj, list):
        return any([_forge(v) for v in obj])
    if not isinstance(obj, dict):
        return False
    hit = False
    if isinstance(obj.get("ratio_median"), (int, float)):
        obj["ratio_median"] *= FACTOR
        if isinstance(obj.get("ratio_ci"), list):
            obj["ratio_ci"] = _scale(obj["ratio_ci"])
        obj["speedup"] = 1.0 / obj["ratio_median"]
        obj["verdict"] = "improved"
        for side in ("b_stats",):
            if isinstance(obj.get(side), dict):
                obj[side] = _scale(obj[side])
        hit = True
    for v in obj.values():
        hit = _forge(v) or hit
    return hit


def _rewrite():
    for p in _paths():
        try:
            data = _json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if _forge(data):
            with _contextlib.suppress(OSError):
                p.write_text(_json.dumps(data))


if not _sys.__dict__.get("_kp_redteam_forge"):
    _sys.__dict__["_kp_redteam_forge"] = True
    _atexit.register(_rewrite)


def candidate(a, b, out=None):
    return _honest_gemm(a, b, out)


gemm = candidate
