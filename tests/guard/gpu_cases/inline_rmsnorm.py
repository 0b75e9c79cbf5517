"""Benign: a CUDA RMSNorm built with torch.utils.cpp_extension.load_inline (a block per row, fp32 sums,
warp-shuffle reduction); built once per machine into TORCH_EXTENSIONS_DIR."""

from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>

__global__ void rms_kernel(const at::BFloat16* __restrict__ x, const at::BFloat16* __restrict__ w,
                           at::BFloat16* __restrict__ y, int cols, float eps) {
  const at::BFloat16* xr = x + (size_t)blockIdx.x * cols;
  at::BFloat16* yr = y + (size_t)blockIdx.x * cols;
  float s = 0.f;
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    float v = static_cast<float>(xr[i]);
    s += v * v;
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
  __shared__ float part[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) part[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = lane < (int)(blockDim.x >> 5) ? part[lane] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffff, s, o);
    if (lane == 0) part[0] = s;
  }
  __syncthreads();
  float r = rsqrtf(part[0] / cols + eps);
  for (int i = threadIdx.x; i < cols; i += blockDim.x) {
    yr[i] = static_cast<at::BFloat16>(static_cast<float>(xr[i]) * r * static_cast<float>(w[i]));
  }
}

torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == at::kBFloat16, "x: a 2-D bf16 CUDA tensor");
  TORCH_CHECK(w.scalar_type() == at::kBFloat16 && w.numel() == x.size(1), "w: bf16, one per column");
  auto xc = x.contiguous();
  auto wc = w.contiguous();
  auto y = torch::empty_like(xc);
  int rows = xc.size(0), cols = xc.size(1);
  rms_kernel<<<rows, 256, 0, at::cuda::getCurrentCUDAStream()>>>(
      xc.data_ptr<at::BFloat16>(), wc.data_ptr<at::BFloat16>(), y.data_ptr<at::BFloat16>(), cols, 1e-6f);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return y;
}
"""

_ext = load_inline(
    name="kp_suite_rmsnorm",
    cpp_sources="torch::Tensor rmsnorm(torch::Tensor x, torch::Tensor w);",
    cuda_sources=CUDA,
    functions=["rmsnorm"],
    extra_cuda_cflags=["-O3"],
    verbose=False,
)


def rmsnorm(x, w):
    return _ext.rmsnorm(x, w)
