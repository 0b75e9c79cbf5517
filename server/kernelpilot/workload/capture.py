"""Capture a step's steady state: a closure through the runner child, or a command through a profiler.

- Closure (`spec`): `python -m kernelpilot.workload.runner` (workload/runner.py) in its own process group
  under `toolchain.run`; it writes the Kineto trace, the code objects it had loaded and CUDA-event step times.
- Command with a region: `ncu --metrics gpu__time_duration.sum` restricted to the NVTX range
  (`--nvtx --nvtx-include <region>/`) or to cudaProfilerStart/Stop (`--profile-from-start off`) on NVIDIA —
  kernels are serialised and there is no timeline, so idle time is lost and the result says so;
  `rocprofv3 --kernel-trace` on AMD (the whole program: rocprofv3 has no region filter here).
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kernelpilot
from kernelpilot.foundation.errors import DeviceUnavailableError, InvalidArgumentError
from kernelpilot.host.toolchain import find_tool, require_tool, run
from kernelpilot.timing.errors import CallableError
from kernelpilot.workload.errors import NoStepWorkError, RegionNotEnteredError
from kernelpilot.workload.models import CaptureTarget
from kernelpilot.workload.readers.trace import Trace
from kernelpilot.workload.runner import EXIT_NO_GPU, EXIT_USER


@dataclass
class Captured:
    trace: Trace
    trace_path: Path | None
    meta: dict[str, Any]


def runner_env() -> dict[str, str]:
    """The environment of a runner child: this kernelpilot first on PYTHONPATH."""
    env = dict(os.environ)
    root = str(Path(kernelpilot.__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def capture_closure(target: CaptureTarget, steps: int, outdir: Path, timeout_s: float) -> Captured:
    if not target.spec:
        raise InvalidArgumentError("give spec (a step factory) or command", "e.g. spec='model.py:make_step'")
    argv = [
        sys.executable,
        "-m",
        "kernelpilot.workload.runner",
        target.spec,
        "--workdir",
        target.workdir,
        "--warmup",
        str(target.warmup),
        "--steps",
        str(steps),
        "--out",
        str(outdir),
        "--kwargs",
        json.dumps(target.factory_kwargs),
    ]
    res = run(argv, timeout_s=timeout_s, cwd=target.workdir, env=runner_env(), check=False)
    tail = (res.stderr.strip() or res.stdout.strip())[-1500:]
    if res.returncode == EXIT_NO_GPU:
        raise DeviceUnavailableError(
            "the capture found no GPU: " + tail, "run on a machine where torch sees a GPU"
        )
    if res.returncode != 0:
        why = (
            "the step factory or closure failed"
            if res.returncode == EXIT_USER
            else f"the runner exited {res.returncode}"
        )
        raise CallableError(
            f"{why}: {tail}", "run the factory alone (kernelpilot time SPEC) and fix what it raises"
        )
    from kernelpilot.workload.readers.kineto import read_kineto

    path = outdir / "trace.json"
    trace = read_kineto(path)
    meta = json.loads((outdir / "meta.json").read_text())
    if not trace.activities:
        raise NoStepWorkError(
            f"{target.spec}: {steps} profiled steps launched no kernel, copy or fill on the GPU",
            "return a closure that runs the step on the GPU (model and inputs on the device)",
        )
    return Captured(trace, path, meta)


def _instances(target: CaptureTarget, steps: int) -> tuple[int, int]:
    """The NVTX range instances profiled: the `steps` after the `skip_steps` skipped (1-based, inclusive)."""
    return target.skip_steps + 1, target.skip_steps + steps


def _ncu_argv(ncu: str, target: CaptureTarget, steps: int) -> list[str]:
    # steady state: no cache flush and no clock lock between kernels (ncu's defaults flush and lock to base)
    argv = [ncu, "--metrics", "gpu__time_duration.sum", "--cache-control", "none", "--clock-control", "none"]
    argv += ["--csv", "--page", "raw"]
    if target.region:
        # exactly the instances skip+1 .. skip+steps of the range (ncu's --range-filter, third field: NVTX
        # range instances, 1-based), so the per-step figures divide by the steps that were profiled
        first, last = _instances(target, steps)
        argv += ["--nvtx", "--nvtx-include", f"{target.region}/", "--range-filter", f"::[{first}-{last}]"]
    else:
        argv += ["--profile-from-start", "off"]
    return [*argv, *(target.command or [])]


def capture_command(target: CaptureTarget, steps: int, outdir: Path, timeout_s: float) -> Captured:
    """A command's region: ncu on NVIDIA, rocprofv3 on AMD (whichever is installed, ncu first)."""
    from kernelpilot.workload.readers.tables import read_ncu_csv, read_rocprof_trace

    if find_tool("ncu") is None and find_tool("rocprofv3") is not None:
        exe = str(require_tool("rocprofv3"))
        run(
            [
                exe,
                "--kernel-trace",
                "--output-format",
                "csv",
                "-d",
                str(outdir),
                "-o",
                "run",
                "--",
                *(target.command or []),
            ],
            timeout_s=timeout_s,
            cwd=target.workdir,
        )
        found = sorted(outdir.rglob("*kernel_trace.csv"))
        if not found:
            raise NoStepWorkError(
                "rocprofv3 wrote no kernel trace: the program launched no kernel",
                "check that the program runs GPU work",
            )
        trace = read_rocprof_trace(found[0].read_text(), str(found[0]), steps)
        trace.notes.append("rocprofv3 traced the whole program (no region filter): warm-up is included")
        return Captured(trace, found[0], {})
    from kernelpilot.profile.ncu_runner import check_messages

    ncu = str(require_tool("ncu"))
    res = run(_ncu_argv(ncu, target, steps), timeout_s=timeout_s, cwd=target.workdir, check=False)
    check_messages(res)
    first, last = _instances(target, steps)
    if "No kernels were profiled" in res.stdout + res.stderr:
        where = (
            f"instances {first}-{last} of NVTX range {target.region!r}"
            if target.region
            else "a cudaProfilerStart/Stop region"
        )
        raise RegionNotEnteredError(
            f"the program ran but never launched a kernel inside {where}",
            "check the range name (push/pop around each step), that the program runs skip_steps + steps of "
            "them, or call torch.cuda.profiler.start()/stop()",
        )
    path = outdir / "ncu_raw.csv"
    path.write_text(res.stdout)
    trace = read_ncu_csv(res.stdout, str(path), steps)
    if target.region:
        trace.notes.append(
            f"ncu profiled instances {first}-{last} of NVTX range {target.region!r} ({target.skip_steps} "
            f"skipped): a program that runs fewer than {last} reads low per step"
        )
    trace.method = (  # keep in step with _ncu_argv
        "ncu gpu__time_duration.sum per launch inside the region, caches not flushed and clocks not locked "
        "(fallback where nsys is absent: kernels are serialised and there is no timeline, so idle and launch "
        "overhead are lost)"
    )
    return Captured(trace, path, {})
