"""Baseline of the RMSNorm task: fp32 upcast and one torch op per step (correct, ~7 kernels, slow)."""


def rmsnorm(x, w):
    xf = x.float()
    var = (xf * xf).mean(-1, keepdim=True)
    y = xf * (var + 1e-6).rsqrt()
    return (y * w.float()).to(x.dtype)
