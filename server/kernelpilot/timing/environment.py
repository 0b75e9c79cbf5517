"""What a measurement ran on: GPU, driver, clocks seen, library versions, git commit and diff hash.

Owns the environment record attached to every timing and eval result. External programs
(nvidia-smi, git) go through `kernelpilot.host.toolchain`; library versions come from package metadata
(no heavy import). It does not time anything.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import ToolchainError
from kernelpilot.host import toolchain

# nvidia-smi --query-gpu fields (documented in `nvidia-smi --help-query-gpu`).
_SMI_FIELDS = ("name", "driver_version", "clocks.sm", "clocks.mem", "clocks.max.sm", "temperature.gpu")


def query_gpus() -> list[dict[str, str]]:
    """One dict per GPU from nvidia-smi (empty when nvidia-smi is absent or refuses)."""
    exe = toolchain.find_tool("nvidia-smi")
    if exe is None:
        return []
    try:
        res = toolchain.run(
            [str(exe), f"--query-gpu={','.join(_SMI_FIELDS)}", "--format=csv,noheader,nounits"],
            timeout_s=20,
            check=False,
        )
    except ToolchainError:
        return []
    if res.returncode != 0:
        return []
    gpus = []
    for line in res.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == len(_SMI_FIELDS):
            gpus.append(dict(zip(_SMI_FIELDS, parts, strict=True)))
    return gpus


# Clock/throttle state (nvidia-smi --help-query-gpu). Drivers >= 535 name the reasons "clocks_event_reasons",
# older ones "clocks_throttle_reasons"; the first set nvidia-smi accepts is used.
_STATE_FIELDS = ("index", "name", "clocks.sm", "clocks.max.sm", "clocks.mem", "temperature.gpu", "power.draw")
_REASON_FIELD_NAMES = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
# Reasons that lower clocks below what the card would otherwise run (NVML nvmlClocksEventReasons bit
# values, NVML API reference "ClocksEventReasons"): SW power cap, HW slowdown, SW thermal, HW thermal,
# HW power brake. 0x1 (GPU idle) and 0x2/0x100 (application/display clock settings) are not warnings.
_THROTTLE_BITS = {
    0x4: "software power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "hardware power brake slowdown",
}


def _smi_query(query: str, fields: tuple[str, ...]) -> list[dict[str, str]] | None:
    exe = toolchain.find_tool("nvidia-smi")
    if exe is None:
        return None
    try:
        res = toolchain.run(
            [str(exe), f"--{query}={','.join(fields)}", "--format=csv,noheader,nounits"],
            timeout_s=20,
            check=False,
        )
    except ToolchainError:
        return None
    if res.returncode != 0:
        return None
    rows = []
    for line in res.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == len(fields):
            rows.append(dict(zip(fields, parts, strict=True)))
    return rows


def gpu_state() -> list[dict[str, str]]:
    """Clocks, temperature, power and the active clock-event (throttle) reasons of every NVIDIA GPU now."""
    for reason in _REASON_FIELD_NAMES:
        rows = _smi_query("query-gpu", (*_STATE_FIELDS, reason))
        if rows is not None:
            for r in rows:
                r["throttle_reasons"] = r.pop(reason)
            return rows
    return _smi_query("query-gpu", _STATE_FIELDS) or []


def throttle_names(mask_text: str) -> list[str]:
    """The slowdown reasons set in an nvidia-smi reasons mask such as '0x0000000000000020'."""
    try:
        mask = int(mask_text, 16)
    except ValueError:
        return []
    return [name for bit, name in _THROTTLE_BITS.items() if mask & bit]


def other_gpu_processes(own_pid: int) -> list[str]:
    """Other processes with a compute context on an NVIDIA GPU ('pid name MiB'), from nvidia-smi."""
    rows = _smi_query("query-compute-apps", ("pid", "process_name", "used_memory")) or []
    return [
        f"pid {r['pid']} {r['process_name']} ({r['used_memory']} MiB)"
        for r in rows
        if r.get("pid", "").isdigit() and int(r["pid"]) != own_pid
    ]


def machine_warnings(
    before: list[dict[str, str]], after: list[dict[str, str]], others: list[str]
) -> list[str]:
    """What makes a measurement suspect: clocks throttled at the end, clocks below max, a shared GPU."""
    out: list[str] = []
    for row in after:
        names = throttle_names(row.get("throttle_reasons", ""))
        if names:
            out.append(
                f"GPU {row.get('index', '?')} was throttled when the run ended ({', '.join(names)}): "
                "the numbers may be low; let it cool and re-run"
            )
    if others:
        out.append(
            "other processes held the GPU during the run (" + "; ".join(others[:4]) + "): it was shared"
        )
    return out


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def library_versions() -> dict[str, str | None]:
    return {
        "python": platform.python_version(),
        "torch": _version("torch"),
        "triton": _version("triton"),
        "numpy": _version("numpy"),
    }


def _git(args: list[str], cwd: Path, timeout_s: float = 30) -> toolchain.RunResult | None:
    exe = toolchain.find_tool("git")
    if exe is None:
        return None
    try:
        return toolchain.run([str(exe), *args], cwd=cwd, timeout_s=timeout_s, check=False)
    except ToolchainError:
        return None


def git_root(path: Path) -> Path | None:
    res = _git(["rev-parse", "--show-toplevel"], path)
    if res is None or res.returncode != 0:
        return None
    return Path(res.stdout.strip())


def git_commit(path: Path) -> str | None:
    res = _git(["rev-parse", "HEAD"], path)
    if res is None or res.returncode != 0:
        return None
    return res.stdout.strip() or None


def git_diff_hash(path: Path, exclude: list[str] | None = None) -> str | None:
    """sha256 over `git diff HEAD --binary` plus the names and contents of untracked files.

    Identical for two trees with the same uncommitted state; the hash of the empty string when
    the tree is clean. `exclude` names paths (relative to the repo root) left out of both.
    """
    root = git_root(path)
    if root is None:
        return None
    specs = ["--", ".", *[f":(exclude){e}" for e in exclude or []]]
    diff = _git(["diff", "HEAD", "--binary", *specs], root)
    untracked = _git(["ls-files", "--others", "--exclude-standard", "-z", *specs], root)
    if diff is None or untracked is None or diff.returncode != 0:
        return None
    h = hashlib.sha256(diff.stdout.encode())
    for name in sorted(n for n in untracked.stdout.split("\0") if n):
        h.update(b"\0untracked\0" + name.encode() + b"\0")
        f = root / name
        if f.is_file():
            h.update(hashlib.sha256(f.read_bytes()).digest())
    return h.hexdigest()


def capture(workdir: Path | None = None, exclude: list[str] | None = None) -> dict[str, Any]:
    """The environment record: GPU(s) with driver and clocks now, library versions, git state."""
    env: dict[str, Any] = {
        "gpus": query_gpus(),
        "versions": library_versions(),
        "platform": platform.platform(),
        "python_executable": sys.executable,
    }
    if workdir is not None:
        env["git_commit"] = git_commit(workdir)
        env["git_diff_hash"] = git_diff_hash(workdir, exclude)
    return env
