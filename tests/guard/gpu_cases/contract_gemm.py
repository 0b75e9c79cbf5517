"""Reference contract of the GPU hack suite: C = A @ B on the GPU (torch), seeded normal inputs."""

import torch

DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp64": torch.float64}


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    a = torch.randn(shape["m"], shape["k"], generator=g, device=device, dtype=torch.float32).to(DT[dtype])
    b = torch.randn(shape["k"], shape["n"], generator=g, device=device, dtype=torch.float32).to(DT[dtype])
    return [a, b]


def reference(a, b):
    return a @ b
