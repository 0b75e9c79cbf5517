"""The one seam through which kernelpilot runs external programs (ncu, nvdisasm, llvm-objdump, ...).

Owns discovery (env override `KERNELPILOT_<NAME>`, then PATH, then known install folders), version
probing, and running: argv lists only (never a shell string), captured output, a timeout that kills
the whole process group, and typed errors. It does not parse any tool's output beyond its version.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernelpilot.foundation.errors import (
    InvalidArgumentError,
    PermissionDeniedError,
    ToolFailedError,
    ToolNotFoundError,
    ToolTimeoutError,
)

# Known programs: name -> (argv suffix that prints a version, extra folders where installers put it).
KNOWN_TOOLS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ncu": (("--version",), ("/usr/local/cuda/bin", "/opt/nvidia/nsight-compute")),
    "rocprofv3": (("--version",), ("/opt/rocm/bin",)),
    "nvdisasm": (("--version",), ("/usr/local/cuda/bin",)),
    "cuobjdump": (("--version",), ("/usr/local/cuda/bin",)),
    "llvm-objdump": (("--version",), ("/opt/rocm/llvm/bin", "/usr/lib/llvm-19/bin", "/usr/lib/llvm-18/bin")),
    "nvcc": (("--version",), ("/usr/local/cuda/bin",)),
    "ptxas": (("--version",), ("/usr/local/cuda/bin",)),
    "hipcc": (("--version",), ("/opt/rocm/bin",)),
    "nvidia-smi": (("--version",), ()),
    "rocm-smi": (("--version",), ("/opt/rocm/bin",)),
    "git": (("--version",), ()),
}

STDERR_TAIL_CHARS = 4000

# Patterns that mean "the tool ran but was refused", with the documented fix.
_PERMISSION_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(r"ERR_NVGPUCTRPERM|permission to access NVIDIA GPU Performance Counters", re.I),
        "allow non-admin counter access (modprobe nvidia NVreg_RestrictProfilingToAdminUsers=0, see "
        "https://developer.nvidia.com/ERR_NVGPUCTRPERM) or run the profiler as root",
    ),
)


def env_var_for(name: str) -> str:
    """`ncu` -> `KERNELPILOT_NCU`, `llvm-objdump` -> `KERNELPILOT_LLVM_OBJDUMP`."""
    return "KERNELPILOT_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()


def _python_scripts_dirs() -> list[str]:
    """Folders pip wheels (nvidia-cuda-nvdisasm, ...) put binaries in, for the running interpreter."""
    dirs = [str(Path(sys.executable).parent)]
    site = (
        Path(sys.prefix)
        / "lib"
        / f"python{sys.version_info.major}.{sys.version_info.minor}"
        / "site-packages"
    )
    for sub in (
        "nvidia/cuda_nvdisasm/bin",
        "nvidia/cuda_cuobjdump/bin",
        "nvidia/cu13/bin",
        "nvidia/cuda_nvcc/bin",
    ):
        dirs.append(str(site / sub))
    return dirs


def triton_bin_dirs() -> list[str]:
    """`triton/backends/nvidia/bin` of the Triton the running interpreter would import: its wheel ships
    ptxas, nvdisasm and cuobjdump, so a CPU host with Triton compiles and counts SASS offline (issue 32).
    Found without importing triton (its import is slow and may need a GPU driver)."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):  # a broken or half-installed package: no bundled tools, not an error
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [str(Path(loc) / "backends" / "nvidia" / "bin") for loc in spec.submodule_search_locations]


# LLVM versions to prefer, newest first: a distribution's plain `llvm-objdump` may be too old to know
# recent AMD targets (Debian 12's LLVM 14 lacks gfx12), while ROCm's or a versioned one does.
_LLVM_VERSIONS = tuple(range(22, 16, -1))


def _preferred(name: str, path_var: str | None) -> Path | None:
    """Newer LLVM builds of an LLVM tool, found before the plain name on PATH."""
    if not name.startswith("llvm-"):
        return None
    candidates = [Path("/opt/rocm/llvm/bin") / name]
    for v in _LLVM_VERSIONS:
        versioned = shutil.which(f"{name}-{v}", path=path_var)
        if versioned:
            candidates.append(Path(versioned))
        candidates.append(Path(f"/usr/lib/llvm-{v}/bin") / name)
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return c
    return None


def find_tool(name: str, env: Mapping[str, str] | None = None) -> Path | None:
    """Locate a program: `KERNELPILOT_<NAME>` if set, else (LLVM tools) the newest versioned build,
    else PATH, else known folders (then pip wheels' and an installed Triton's bundled bin). None if absent."""
    environ = os.environ if env is None else env
    override = environ.get(env_var_for(name))
    if override:
        p = Path(override).expanduser()
        return p if p.is_file() and os.access(p, os.X_OK) else None
    preferred = _preferred(name, environ.get("PATH"))
    if preferred is not None:
        return preferred
    found = shutil.which(name, path=environ.get("PATH"))
    if found:
        return Path(found)
    extra = list(KNOWN_TOOLS.get(name, ((), ()))[1]) + _python_scripts_dirs() + triton_bin_dirs()
    for folder in extra:
        base = Path(folder)
        if not base.is_dir():
            continue
        direct = base / name
        if direct.is_file() and os.access(direct, os.X_OK):
            return direct
        # e.g. /opt/nvidia/nsight-compute/<version>/ncu
        for candidate in sorted(base.glob(f"*/{name}"), reverse=True):
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
    return None


def require_tool(name: str) -> Path:
    """Like `find_tool` but raises `ToolNotFoundError` with the override variable in the hint."""
    path = find_tool(name)
    if path is None:
        override = os.environ.get(env_var_for(name))
        where = f"{env_var_for(name)}={override} is not an executable file" if override else "not on PATH"
        raise ToolNotFoundError(
            f"required program {name!r} not found ({where})",
            f"install it or set {env_var_for(name)} to its full path",
        )
    return path


@dataclass(frozen=True)
class RunResult:
    """What a finished program left behind."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    timeout_s: float = 120.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    stdin_data: bytes | None = None,
) -> RunResult:
    """Run argv (a list, never a shell string) with captured output and a process-group timeout.

    Raises ToolNotFoundError if argv[0] cannot be executed, ToolTimeoutError after killing the group,
    PermissionDeniedError on known refusal messages, ToolFailedError on non-zero exit when `check`.
    """
    if isinstance(argv, (str, bytes)):
        raise InvalidArgumentError(
            "argv must be a list of arguments, not a shell string", "split the command"
        )
    args = [os.fspath(a) for a in argv]
    if not args:
        raise InvalidArgumentError("argv is empty", "give the program and its arguments")
    if timeout_s <= 0:
        raise InvalidArgumentError(f"timeout_s must be > 0, got {timeout_s}", "give a positive timeout")
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            start_new_session=True,
        )
    except FileNotFoundError as exc:
        raise ToolNotFoundError(
            f"program {args[0]!r} not found", f"install it or set {env_var_for(Path(args[0]).name)}"
        ) from exc
    except PermissionError as exc:
        raise ToolNotFoundError(f"program {args[0]!r} is not executable", "check its file mode") from exc
    try:
        out_b, err_b = proc.communicate(input=stdin_data, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out_b, err_b = proc.communicate()
        tail = err_b.decode("utf-8", "replace")[-STDERR_TAIL_CHARS:]
        raise ToolTimeoutError(
            f"{Path(args[0]).name} did not finish within {timeout_s:g} s and was killed (process group)"
            + (f"; stderr tail: {tail.strip()[-500:]}" if tail.strip() else ""),
            "raise the timeout, or narrow the work (fewer kernels, fewer metrics)",
        ) from None
    finally:
        if proc.poll() is None:
            _kill_group(proc)
    # Kill anything the program left behind in its group (daemons it forked).
    _kill_group(proc)
    stdout = out_b.decode("utf-8", "replace")
    stderr = err_b.decode("utf-8", "replace")
    result = RunResult(tuple(args), proc.returncode, stdout, stderr, time.perf_counter() - start)
    if proc.returncode != 0 and check:
        combined = stderr + "\n" + stdout
        for pattern, fix in _PERMISSION_PATTERNS:
            if pattern.search(combined):
                raise PermissionDeniedError(f"{Path(args[0]).name} was refused: {pattern.pattern}", fix)
        tail = (stderr.strip() or stdout.strip())[-STDERR_TAIL_CHARS:]
        raise ToolFailedError(
            f"{Path(args[0]).name} exited with code {proc.returncode}",
            "read the stderr tail below; check the arguments and input files",
            returncode=proc.returncode,
            stderr_tail=tail,
        )
    return result


def tool_version(name: str, path: Path | None = None, timeout_s: float = 20.0) -> str | None:
    """First meaningful line of `<tool> --version`, or None if the tool is absent or refuses."""
    exe = path or find_tool(name)
    if exe is None:
        return None
    suffix = KNOWN_TOOLS.get(name, (("--version",), ()))[0]
    try:
        res = run([str(exe), *suffix], timeout_s=timeout_s, check=False)
    except (ToolNotFoundError, ToolTimeoutError):
        return None
    text = (res.stdout or res.stderr).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if re.search(r"\d+\.\d+", ln) and ("release" in ln.lower() or "version" in ln.lower()):
            return ln
    return lines[0] if lines else None
