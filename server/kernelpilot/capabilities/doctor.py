"""Capability declarations for `doctor`."""

from kernelpilot.capabilities import Capability
from kernelpilot.host.doctor import DoctorRequest, DoctorResult

CAPABILITIES = [
    Capability(
        tool="doctor",
        command=("doctor",),
        summary="Show which GPU tools and GPUs this machine has and what each enables.",
        description=(
            "Inspect this machine: GPU tools (ncu, rocprofv3, nvdisasm, cuobjdump, llvm-objdump, nvcc, "
            "hipcc, nvidia-smi, rocm-smi; KERNELPILOT_<TOOL> sets a path) and versions, the GPUs (is each "
            "in the gpu-wiki; else `ceilings measure`), what each capability lacks. Call it first when a "
            "tool reports a missing program."
        ),
        request=DoctorRequest,
        result=DoctorResult,
        target="kernelpilot.host.doctor:run_doctor",
        toolset="core",
    )
]
