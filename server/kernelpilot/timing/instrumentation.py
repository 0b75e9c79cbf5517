"""Environment variables that change what a timing measures (profilers, injection, serialisation, debug).

`kernelpilot time` strips them from commands it runs and warns when they are set in its own process;
tasks strip them from every eval command. A trailing '*' is a prefix match (fnmatch).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Mapping

DEFAULT_STRIP_ENV: tuple[str, ...] = (
    "CUDA_LAUNCH_BLOCKING",  # serialises every launch
    "CUDA_INJECTION64_PATH",  # profiler/tool injection (Nsight, CUPTI tools)
    "NVTX_INJECTION64_PATH",
    "NCU_*",  # Nsight Compute
    "NSYS_*",  # Nsight Systems
    "NV_NSIGHT*",
    "CUPTI_*",
    "COMPUTE_SANITIZER*",
    "LD_PRELOAD",  # interposers
    "ROCPROF*",  # rocprof / rocprofv3
    "ROCTRACER*",
    "HSA_TOOLS_LIB",  # ROCm tool injection
    "HSA_TOOLS_REPORT_LOAD_FAILURE",
    "AMD_SERIALIZE_KERNEL",
    "AMD_SERIALIZE_COPY",
    "AMD_LOG_LEVEL",
    "HIP_LAUNCH_BLOCKING",
    "TORCH_COMPILE_DEBUG",
    "TORCH_LOGS",
    "TORCH_SHOW_CPP_STACKTRACES",
    "PYTORCH_NO_CUDA_MEMORY_CACHING",
    "TRITON_INTERPRET",  # runs Triton kernels on the CPU interpreter
    "TRITON_DEBUG",
    "KINETO_*",
)


def matches(name: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def present(env: Mapping[str, str] | None = None, patterns: Iterable[str] = DEFAULT_STRIP_ENV) -> list[str]:
    """Names of instrumentation variables set in env (default: this process)."""
    pats = list(patterns)
    return sorted(k for k in (os.environ if env is None else env) if matches(k, pats))


def stripped(
    env: Mapping[str, str] | None = None, patterns: Iterable[str] = DEFAULT_STRIP_ENV
) -> dict[str, str]:
    """A copy of env (default: this process) without the instrumentation variables."""
    pats = list(patterns)
    return {k: v for k, v in (os.environ if env is None else env).items() if not matches(k, pats)}
