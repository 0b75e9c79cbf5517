"""`doctor`: what this machine can do for kernelpilot — tools found, their versions, GPUs present,
and which capabilities each enables or why one is unavailable. Read-only; it changes nothing.
"""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import Field

from kernelpilot import toolchain
from kernelpilot.errors import ToolchainError
from kernelpilot.models import Request, Result

DOCTOR_TOOLS = (
    "ncu",
    "rocprofv3",
    "nvdisasm",
    "cuobjdump",
    "llvm-objdump",
    "nvcc",
    "hipcc",
    "nvidia-smi",
    "rocm-smi",
)


class DoctorRequest(Request):
    """No arguments: doctor inspects the machine it runs on."""

    probe_gpus: bool = Field(True, description="Ask nvidia-smi / rocm-smi for the GPUs present.")


class ToolStatus(Result):
    name: str
    found: bool
    path: str | None = None
    version: str | None = None
    env_var: str = Field(description="Environment variable that overrides this tool's path.")


class GpuInfo(Result):
    vendor: str
    index: int
    name: str
    detail: str = ""


class CapabilityStatus(Result):
    capability: str
    available: bool
    needs: list[str]
    reason: str


class DoctorResult(Result):
    tools: list[ToolStatus]
    gpus: list[GpuInfo]
    capabilities: list[CapabilityStatus]
    python_packages: dict[str, bool]

    def render_text(self) -> str:
        lines = ["Tools:"]
        for t in self.tools:
            if t.found:
                lines.append(f"  [x] {t.name:<13} {t.version or '(version unknown)'}  ({t.path})")
            else:
                lines.append(f"  [ ] {t.name:<13} not found (set {t.env_var} to override)")
        lines.append("GPUs:")
        if self.gpus:
            lines.extend(f"  {g.vendor} #{g.index}: {g.name} {g.detail}".rstrip() for g in self.gpus)
        else:
            lines.append("  none detected")
        lines.append(
            "Python packages: "
            + ", ".join(f"{k}={'yes' if v else 'no'}" for k, v in self.python_packages.items())
        )
        lines.append("Capabilities:")
        for c in self.capabilities:
            mark = "ok " if c.available else "-- "
            lines.append(f"  {mark}{c.capability}: {c.reason}")
        return "\n".join(lines)


# capability -> (any-of tool groups that must all be satisfied, needs GPU vendor or None, python pkg or None)
_CAPABILITY_NEEDS: tuple[tuple[str, tuple[tuple[str, ...], ...], str | None, str | None], ...] = (
    ("ISA resources from cubin/fatbin/HSACO (pure Python)", (), None, None),
    ("wiki lookup, citation audit, roofline", (), None, None),
    ("SASS disassembly and instruction mix", (("nvdisasm", "cuobjdump"),), None, None),
    ("fatbin fallback for compressed entries", (("cuobjdump",),), None, None),
    ("AMDGCN disassembly and instruction mix", (("llvm-objdump",),), None, None),
    ("NVIDIA profiling (ncu)", (("ncu",),), "NVIDIA", None),
    ("reading .ncu-rep reports", (("ncu",),), None, None),
    ("AMD profiling (rocprofv3)", (("rocprofv3",),), "AMD", None),
    ("kernel timing and ceilings (PyTorch)", (), "any", "torch"),
    ("building CUDA kernels", (("nvcc",),), None, None),
    ("building HIP kernels", (("hipcc",),), None, None),
)


def _probe_tool(name: str) -> ToolStatus:
    path = toolchain.find_tool(name)
    version = toolchain.tool_version(name, path) if path else None
    return ToolStatus(
        name=name,
        found=path is not None,
        path=str(path) if path else None,
        version=version,
        env_var=toolchain.env_var_for(name),
    )


def _nvidia_gpus(smi: Path) -> list[GpuInfo]:
    try:
        res = toolchain.run([str(smi), "-L"], timeout_s=20, check=True)
    except ToolchainError:
        return []
    gpus: list[GpuInfo] = []
    for line in res.stdout.splitlines():
        m = re.match(r"GPU (\d+): (.+?)(?: \((UUID: .+)\))?$", line.strip())
        if m:
            gpus.append(
                GpuInfo(vendor="NVIDIA", index=int(m.group(1)), name=m.group(2), detail=m.group(3) or "")
            )
    return gpus


def _amd_gpus(smi: Path) -> list[GpuInfo]:
    try:
        res = toolchain.run([str(smi), "--showproductname"], timeout_s=20, check=True)
    except ToolchainError:
        return []
    gpus: dict[int, GpuInfo] = {}
    for line in res.stdout.splitlines():
        m = re.match(r"GPU\[(\d+)\]\s*:\s*Card (?:series|Series|model|Model)\s*:\s*(.+)", line.strip())
        if m and int(m.group(1)) not in gpus:
            gpus[int(m.group(1))] = GpuInfo(vendor="AMD", index=int(m.group(1)), name=m.group(2).strip())
    return list(gpus.values())


def run_doctor(request: DoctorRequest) -> DoctorResult:
    """Probe tools in parallel (each bounded by a timeout), then GPUs, then derive capabilities."""
    with ThreadPoolExecutor(max_workers=len(DOCTOR_TOOLS)) as pool:
        tools = list(pool.map(_probe_tool, DOCTOR_TOOLS))
    by_name = {t.name: t for t in tools}
    gpus: list[GpuInfo] = []
    if request.probe_gpus:
        if by_name["nvidia-smi"].found and by_name["nvidia-smi"].path:
            gpus += _nvidia_gpus(Path(by_name["nvidia-smi"].path))
        if by_name["rocm-smi"].found and by_name["rocm-smi"].path:
            gpus += _amd_gpus(Path(by_name["rocm-smi"].path))
    packages = {p: importlib.util.find_spec(p) is not None for p in ("torch", "triton")}
    caps: list[CapabilityStatus] = []
    for cap, groups, vendor, pkg in _CAPABILITY_NEEDS:
        missing: list[str] = []
        for group in groups:
            if not any(by_name.get(g) is not None and by_name[g].found for g in group):
                missing.append(" or ".join(group))
        if vendor == "any" and not gpus:
            missing.append("a GPU (none detected)")
        elif vendor in ("NVIDIA", "AMD") and not any(g.vendor == vendor for g in gpus):
            missing.append(f"an {vendor} GPU (none detected)")
        if pkg and not packages.get(pkg, False):
            missing.append(f"Python package {pkg}")
        needs = (
            [" or ".join(g) for g in groups] + ([f"{vendor} GPU"] if vendor else []) + ([pkg] if pkg else [])
        )
        caps.append(
            CapabilityStatus(
                capability=cap,
                available=not missing,
                needs=needs,
                reason="available" if not missing else "missing: " + "; ".join(missing),
            )
        )
    return DoctorResult(tools=tools, gpus=gpus, capabilities=caps, python_packages=packages)
