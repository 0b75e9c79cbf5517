"""The ncu runner: build the argv (clock control off by default), run it through `kernelpilot.host.toolchain`
with a timeout, turn its messages into typed errors, and parse the raw page it prints."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kernelpilot.foundation.errors import InvalidArgumentError, PermissionDeniedError, ToolFailedError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.host.toolchain import RunResult, require_tool, run
from kernelpilot.profile import metrics as M
from kernelpilot.profile.errors import ProfilerError
from kernelpilot.profile.models import ProfileRunRequest

PERM_FIX = (
    "allow non-admin access to GPU performance counters: `echo 'options nvidia "
    "NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/nvidia-prof.conf` then reload the "
    "driver or reboot (https://developer.nvidia.com/ERR_NVGPUCTRPERM), or run ncu as root"
)
_PASSES = re.compile(r"==PROF== Profiling .* - (\d+) pass(?:es)?", re.M)


def build_ncu_argv(
    req: ProfileRunRequest, ncu: str = "ncu", csv_stdout: bool = True, extra: Sequence[str] = ()
) -> list[str]:
    """ncu argv for a request. With `csv_stdout` the raw page goes to stdout; with `req.export` a report is
    written instead (read it back with `import_argv`). `extra` ncu options (filters the request has no
    field for, such as `--kernel-id`) go just before the command."""
    if not req.command:
        raise InvalidArgumentError("command is empty", "give the program to profile and its arguments")
    argv = [ncu, "--clock-control", req.clock_control]
    if req.mode == "roofline":
        argv += ["--metrics", ",".join(M.roofline_metrics(req.roofline_tensor, req.roofline_sol))]
    elif req.mode == "full":
        argv += ["--set", "full"]
    elif req.mode == "sections":
        if not req.sections:
            raise InvalidArgumentError(
                "mode=sections needs --sections", "name ncu sections, e.g. SpeedOfLight"
            )
        for s in req.sections:
            argv += ["--section", s]
    else:
        if not req.metrics:
            raise InvalidArgumentError(
                "mode=metrics needs --metrics", "name ncu metrics, e.g. dram__bytes_read.sum"
            )
        argv += ["--metrics", ",".join(req.metrics)]
    if req.kernel_name:
        argv += ["--kernel-name", req.kernel_name]
    if req.launch_skip:
        argv += ["--launch-skip", str(req.launch_skip)]
    if req.launch_count is not None:
        argv += ["--launch-count", str(req.launch_count)]
    if req.replay_mode != "kernel":
        argv += ["--replay-mode", req.replay_mode]
    if not req.profile_from_start:
        argv += ["--profile-from-start", "off"]
    argv += ["--import-source", "yes" if req.import_source else "no"]
    if req.export:
        argv += ["--export", req.export, "--force-overwrite"]
    elif csv_stdout:
        argv += ["--csv", "--page", "raw"]
    return [*argv, *extra, *req.command]


def import_argv(
    report: str, page: str = "raw", ncu: str = "ncu", print_source: str | None = None
) -> list[str]:
    argv = [ncu, "--import", report, "--csv", "--page", page]
    if print_source:
        argv += ["--print-source", print_source]
    return argv


def check_messages(res: RunResult) -> None:
    """Raise typed errors for ncu's own failures (it often exits 0 while printing ==ERROR==)."""
    text = res.stdout + "\n" + res.stderr
    if re.search(r"ERR_NVGPUCTRPERM|permission to access NVIDIA GPU Performance Counters", text, re.I):
        raise PermissionDeniedError(
            "ncu was refused access to GPU performance counters (ERR_NVGPUCTRPERM)", PERM_FIX
        )
    if res.returncode != 0:
        tail = (res.stderr.strip() or res.stdout.strip())[-2000:]
        raise ToolFailedError(
            f"ncu exited with code {res.returncode}",
            "the profiled program or ncu failed; read the tail",
            returncode=res.returncode,
            stderr_tail=tail,
        )
    errors = [ln.strip() for ln in text.splitlines() if ln.startswith("==ERROR==")]
    if errors:
        raise ProfilerError(
            "ncu reported errors: " + " | ".join(errors[:5]), "read the messages; check the arguments"
        )


def passes_from_messages(text: str) -> int | None:
    found = [int(x) for x in _PASSES.findall(text)]
    return max(found) if found else None


def run_ncu(req: ProfileRunRequest, progress: Progress = no_progress) -> tuple[str, list[str], float, str]:
    """Run ncu; returns (raw-page CSV text, argv, wall seconds, profiler messages)."""
    ncu = str(require_tool("ncu"))
    argv = build_ncu_argv(req, ncu)
    progress(0, 2, "running ncu " + req.mode)
    res = run(argv, timeout_s=req.timeout_s, cwd=req.workdir, check=False)
    check_messages(res)
    wall = res.duration_s
    text = res.stdout
    messages = res.stdout + "\n" + res.stderr
    if req.export:
        from kernelpilot.profile.ncu_csv import check_no_kernels

        check_no_kernels(messages)
        progress(1, 2, "reading report")
        rep = req.export if req.export.endswith(".ncu-rep") else req.export + ".ncu-rep"
        imp = run(import_argv(rep, ncu=ncu), timeout_s=req.timeout_s, check=False)
        check_messages(imp)
        text = imp.stdout
        wall += imp.duration_s
    progress(2, 2, "ncu done")
    return text, argv, wall, messages


def read_report(path: str | os.PathLike[str], page: str = "raw", print_source: str | None = None) -> str:
    """CSV text of one page of an .ncu-rep, through `ncu --import` (ncu must be installed)."""
    ncu = str(require_tool("ncu"))
    res = run(import_argv(str(path), page, ncu, print_source), timeout_s=300, check=False)
    check_messages(res)
    return res.stdout


def temp_report_path() -> str:
    fd, name = tempfile.mkstemp(suffix=".ncu-rep", prefix="kernelpilot-")
    os.close(fd)
    Path(name).unlink()
    return name


def split_command(cmd: Sequence[str]) -> list[str]:
    return [str(c) for c in cmd]
