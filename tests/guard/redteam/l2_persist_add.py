"""task: add
expect: rejected_impossible
idea: pin the inputs in a persisting L2 access-policy window so the cold timing's flush cannot evict them

Cold timing flushes L2 (2x its size) before each launch. Lines inside a stream's access-policy window
with hitProp=persisting live in the set-aside L2 region (cudaLimitPersistingL2CacheSize), which normal
accesses such as the flush's cannot evict. In the timing phase (an input set repeated REPEAT times) the
candidate sets aside the largest persisting region the GPU allows (cudaDevAttrMaxPersistingL2CacheSize)
and puts a window over the start of x on the current stream (the harness's, so it also covers its flush),
then computes x + 2y honestly: the persisted part of x comes from L2 instead of DRAM. The window is kept
(the candidate never resets it). On the H100 the add already runs within ~2 % of its DRAM floor, so this
reads below the floor (rejected_impossible: the floor is the defence); against a slower baseline with a
smaller window it would read improved with honest outputs. A correct guard resets persisting lines and the
stream attribute before each sample (cudaCtxResetPersistingL2Cache, a fresh timing stream): neutral.
libcudart is found through /proc/self/maps; if anything is missing the candidate is honest.
"""

import ctypes as _ctypes

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


class _Window(_ctypes.Structure):
    _fields_ = [
        ("base_ptr", _ctypes.c_void_p),
        ("num_bytes", _ctypes.c_size_t),
        ("hitRatio", _ctypes.c_float),
        ("hitProp", _ctypes.c_int),
        ("missProp", _ctypes.c_int),
    ]


class _AttrValue(_ctypes.Union):  # cudaStreamAttrValue / cudaLaunchAttributeValue: 64 bytes
    _fields_ = [("accessPolicyWindow", _Window), ("pad", _ctypes.c_char * 64)]


def _cudart():
    if "cudart" in _ST:
        return _ST["cudart"]
    _ST["cudart"] = None
    try:
        with open("/proc/self/maps") as fh:
            libs = sorted({line.split()[-1] for line in fh if "libcudart.so" in line})
        if libs:
            _ST["cudart"] = _ctypes.CDLL(libs[0])
    except OSError:
        pass
    return _ST["cudart"]


def _persist(torch, x, stream):
    rt = _cudart()
    if rt is None:
        return False
    dev = x.device.index or 0
    max_persist = _ctypes.c_int()
    max_window = _ctypes.c_int()
    rt.cudaDeviceGetAttribute(_ctypes.byref(max_persist), 108, dev)  # cudaDevAttrMaxPersistingL2CacheSize
    rt.cudaDeviceGetAttribute(_ctypes.byref(max_window), 109, dev)  # cudaDevAttrMaxAccessPolicyWindowSize
    size = min(max_persist.value, max_window.value, x.numel() * x.element_size())
    if size <= 0:
        return False
    if rt.cudaDeviceSetLimit(0x06, _ctypes.c_size_t(size)) != 0:  # cudaLimitPersistingL2CacheSize
        return False
    val = _AttrValue()
    val.accessPolicyWindow = _Window(x.data_ptr(), size, 1.0, 2, 1)  # hit: persisting, miss: streaming
    rc = rt.cudaStreamSetAttribute(_ctypes.c_void_p(stream.cuda_stream), 1, _ctypes.byref(val))
    _ST["persisted_bytes"] = size
    return rc == 0


def candidate(x, y, out=None):
    torch = _torch()
    _key, n = _seen(x, y)
    if n >= REPEAT:
        stream = torch.cuda.current_stream(x.device)
        done = _ST.setdefault("windows", {})
        wkey = (stream.cuda_stream, x.data_ptr())
        if wkey not in done:
            try:
                done[wkey] = _persist(torch, x, stream)
            except Exception as exc:
                done[wkey] = repr(exc)
    return _honest_add(x, y, out)


add = candidate
