"""`doctor`: what this machine can do for kernelpilot — tools found, their versions, GPUs present,
and which capabilities each enables or why one is unavailable. Read-only; it changes nothing.
"""

from __future__ import annotations

import importlib.util
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pydantic import Field

from kernelpilot.foundation.errors import KernelpilotError, ToolchainError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.host import toolchain
from kernelpilot.wiki.models import WIKI_FIELD_DESCRIPTION

DOCTOR_TOOLS = (
    "ncu",
    "rocprofv3",
    "nvdisasm",
    "cuobjdump",
    "llvm-objdump",
    "nvcc",
    "ptxas",
    "hipcc",
    "nvidia-smi",
    "rocm-smi",
)


class DoctorRequest(Request):
    """No arguments: doctor inspects the machine it runs on."""

    probe_gpus: bool = Field(True, description="Ask nvidia-smi / rocm-smi for the GPUs present.")
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)


class ToolStatus(Result):
    name: str
    found: bool
    path: str | None = None
    version: str | None = None
    env_var: str = Field(description="Environment variable that overrides this tool's path.")
    bundled_with: str | None = Field(
        None, description="The Python package whose wheel ships the program found (triton), if so."
    )


class GpuInfo(Result):
    vendor: str
    index: int
    name: str
    detail: str = ""


class WikiMatch(Result):
    """Whether a GPU of this machine is described by the gpu-wiki (roofline needs its cited peaks)."""

    device: str = Field(description="the GPU name as the driver tool reports it")
    gpu_id: str | None = Field(default=None, description="wiki GPU id whose id/alias equals the name")
    candidates: list[str] = Field(
        default_factory=list, description="close wiki ids (prefix match, not taken)"
    )
    missing_metrics: list[str] = Field(
        default_factory=list, description="roofline-critical metrics UNKNOWN for that wiki GPU"
    )
    measured_count: int = Field(default=0, description="measured ceiling lines the wiki holds for it")
    suggestion: str = Field(default="", description="command that fills measured lines for this GPU")


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
    wiki: list[WikiMatch] = Field(
        default_factory=list, description="per GPU found: is it in the gpu-wiki (alias match)"
    )
    wiki_error: str | None = Field(default=None, description="why the wiki could not be loaded, if so")

    def render_text(self) -> str:
        lines = ["Tools:"]
        for t in self.tools:
            if t.found:
                via = f", shipped with {t.bundled_with}" if t.bundled_with else ""
                lines.append(f"  [x] {t.name:<13} {t.version or '(version unknown)'}  ({t.path}{via})")
            else:
                lines.append(f"  [ ] {t.name:<13} not found (set {t.env_var} to override)")
        lines.append("GPUs:")
        if self.gpus:
            lines.extend(f"  {g.vendor} #{g.index}: {g.name} {g.detail}".rstrip() for g in self.gpus)
        else:
            lines.append("  none detected")
        for w in self.wiki:
            if w.gpu_id:
                gaps = (
                    f"{len(w.missing_metrics)} roofline-critical UNKNOWN ({', '.join(w.missing_metrics)})"
                    if w.missing_metrics
                    else "every roofline-critical metric cited"
                )
                lines.append(
                    f"  wiki: {w.device!r} -> {w.gpu_id}: {gaps}; {w.measured_count} measured ceilings"
                )
            else:
                close = f" (close: {', '.join(w.candidates)})" if w.candidates else ""
                lines.append(f"  wiki: {w.device!r} is not in the gpu-wiki{close}")
            if w.suggestion:
                lines.append(f"    fill measured lines: {w.suggestion}")
        if self.wiki_error:
            lines.append(f"  wiki: not loaded: {self.wiki_error}")
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
    (
        "offline SASS counts: PTX to cubin (ptxas) and disassembly, no GPU",
        (("ptxas",), ("nvdisasm",)),
        None,
        None,
    ),
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
    triton = {str(Path(d)) for d in toolchain.triton_bin_dirs()}
    return ToolStatus(
        bundled_with="triton" if path is not None and str(path.parent) in triton else None,
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
    wiki_matches: list[WikiMatch] = []
    wiki_error: str | None = None
    if gpus:
        try:
            wiki_matches = _wiki_matches(gpus, request.wiki)
        except KernelpilotError as exc:
            wiki_error = f"{exc.message} ({exc.hint})" if exc.hint else exc.message
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
    return DoctorResult(
        tools=tools,
        gpus=gpus,
        capabilities=caps,
        python_packages=packages,
        wiki=wiki_matches,
        wiki_error=wiki_error,
    )


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "my-gpu"


def _wiki_matches(gpus: list[GpuInfo], wiki_dirs: list[str]) -> list[WikiMatch]:
    """Match each distinct GPU name to the wiki (exact alias only) and say how to fill what is missing."""
    from kernelpilot.wiki.core import load_wiki
    from kernelpilot.wiki.coverage import match_device, missing_critical

    wiki = load_wiki([Path(d) for d in wiki_dirs])
    out: list[WikiMatch] = []
    for name in dict.fromkeys(g.name for g in gpus):
        gpu_id, close = match_device(wiki, name)
        if gpu_id is None:
            slug = _slug(name)  # the id `ceilings measure` makes from the device name
            cmd = (
                f"kernelpilot ceilings measure --out kp-wiki/{slug}.md, then pass --wiki kp-wiki "
                f"(cited datasheet lines added to that file enable the spec roofline)"
            )
            out.append(WikiMatch(device=name, candidates=close, suggestion=cmd))
            continue
        entry = wiki.gpus[gpu_id]
        measured = sum(1 for c in entry.specs.values() if c.measured)
        cmd = ""
        if measured == 0:
            cmd = (
                f"kernelpilot ceilings measure --gpu {gpu_id} --out kp-wiki/{gpu_id}.md, "
                "then pass --wiki kp-wiki"
            )
        out.append(
            WikiMatch(
                device=name,
                gpu_id=gpu_id,
                missing_metrics=missing_critical(entry),
                measured_count=measured,
                suggestion=cmd,
            )
        )
    return out
