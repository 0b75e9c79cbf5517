"""kind: honest
family: -
contract: axpy
twin: -
idea: a C++ extension built by torch.utils.cpp_extension.load_inline on the first call

issue 40: "Honest code stays accepted ... `load_inline` extensions". The extension (a parallel loop over the
elements with `at::parallel_for`) is compiled by the first call (tens of seconds with g++ and torch's
headers; cached in torch's extension folder afterwards) and loaded into the process; it replaces no Python
function. A correct judge accepts it at about honest_axpy's speed.
"""

import torch  # noqa: F401 - loaded before the extension, which links against it

CPP = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor axpy(torch::Tensor x, torch::Tensor y) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat && y.scalar_type() == torch::kFloat, "fp32 only");
    auto xc = x.contiguous();
    auto yc = y.contiguous();
    auto out = torch::empty_like(xc);
    const float* xp = xc.data_ptr<float>();
    const float* yp = yc.data_ptr<float>();
    float* op = out.data_ptr<float>();
    at::parallel_for(0, xc.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) op[i] = 2.5f * xp[i] + yp[i];
    });
    return out;
}
"""
_EXT: list = []


def _ext():
    if not _EXT:
        from torch.utils.cpp_extension import load_inline

        _EXT.append(load_inline(name="kp_redteam_axpy", cpp_sources=[CPP], functions=["axpy"], verbose=False))
    return _EXT[0]


def candidate(x, y):
    return _ext().axpy(x, y)
