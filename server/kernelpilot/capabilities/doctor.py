"""Capability declarations for `doctor`."""

from kernelpilot.capabilities import Capability
from kernelpilot.host.doctor import DoctorRequest, DoctorResult

CAPABILITIES = [
    Capability(
        tool="doctor",
        command=("doctor",),
        summary="Show which GPU tools and GPUs this machine has and what each enables.",
        description=(
            "Inspect this machine: finds ncu, rocprofv3, nvdisasm, cuobjdump, llvm-objdump, nvcc, hipcc, "
            "nvidia-smi, rocm-smi (paths overridable by KERNELPILOT_<TOOL> env vars), their versions, the "
            "GPUs present (and whether the gpu-wiki describes each, with the `ceilings measure` command that "
            "fills measured lines when it does not), and for each kernelpilot capability whether it is "
            "available or what is missing. "
            "Call this first when a profiling, disassembly or timing tool reports a missing program."
        ),
        request=DoctorRequest,
        result=DoctorResult,
        target="kernelpilot.host.doctor:run_doctor",
        toolset="core",
    )
]
