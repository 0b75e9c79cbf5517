"""What a measurement ran on: GPU, driver, clocks seen, library versions, git commit and diff hash.

Owns the environment record attached to every timing and eval result. External programs
(nvidia-smi, git) go through `kernelpilot.toolchain`; library versions come from package metadata
(no heavy import). It does not time anything.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

from kernelpilot import toolchain
from kernelpilot.errors import ToolchainError

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
