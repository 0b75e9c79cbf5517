"""Thread-trace capture: the rocprofv3 `--att` invocation (argv or input-YAML form) and its newest output.

Flags and YAML keys as documented for rocprofv3 (ROCm rocprofiler-sdk "Using thread trace" and "Using
rocprofv3" input files): `--att`, `--att-target-cu` (0-15), `--att-shader-engine-mask` (bitmask, default 0x1),
`--att-simd-select`, `--att-buffer-size` (default 256 MB), `--kernel-include-regex`,
`--kernel-iteration-range`; in YAML `jobs: [{advanced_thread_trace: true, att_target_cu: ..., ...}]`
given with `-i`. rocprofv3 decodes the trace itself and writes `ui_output_agent_<pid>_dispatch_<n>/` folders
under the output directory (sometimes below host/pid subfolders).
"""

from __future__ import annotations

import json
from pathlib import Path

from kernelpilot.foundation.errors import InvalidArgumentError
from kernelpilot.profile.att.reader import DISPATCH_RE
from kernelpilot.profile.errors import AttFormatError
from kernelpilot.profile.models import ProfileRunRequest


def _kernel_regex(req: ProfileRunRequest) -> str | None:
    if not req.kernel_name:
        return None
    return req.kernel_name[len("regex:") :] if req.kernel_name.startswith("regex:") else req.kernel_name


def att_yaml(req: ProfileRunRequest, outdir: str) -> str:
    """The rocprofv3 input-file (YAML) form of the same job; values JSON-quoted (valid YAML scalars)."""
    job: list[tuple[str, object]] = [("advanced_thread_trace", True), ("kernel_trace", True)]
    regex = _kernel_regex(req)
    if regex:
        job.append(("kernel_include_regex", regex))
    if req.att_iteration_range:
        job.append(("kernel_iteration_range", req.att_iteration_range))
    job += [("att_target_cu", req.att_target_cu), ("att_shader_engine_mask", req.att_shader_engine_mask)]
    if req.att_simd_select:
        job.append(("att_simd_select", req.att_simd_select))
    if req.att_buffer_size:
        job.append(("att_buffer_size", req.att_buffer_size))
    job += [("output_directory", outdir), ("output_format", ["csv", "json"])]
    lines = ["jobs:", "  -"] + [f"    {k}: {json.dumps(v)}" for k, v in job]
    return "\n".join(lines) + "\n"


def build_att_argv(req: ProfileRunRequest, outdir: str, exe: str = "rocprofv3") -> list[str]:
    """argv of a thread-trace capture; att_input="yaml" writes the job to `<outdir>/att_input.yaml` (-i)."""
    if not req.command:
        raise InvalidArgumentError("command is empty", "give the program to profile and its arguments")
    for name, v in (
        ("att_shader_engine_mask", req.att_shader_engine_mask),
        ("att_simd_select", req.att_simd_select),
    ):
        if v is not None:
            try:
                int(v, 0)
            except ValueError as exc:
                raise InvalidArgumentError(
                    f"{name}={v!r} is not a number", "give a bitmask such as 0xf"
                ) from exc
    if req.att_input == "yaml":
        path = Path(outdir) / "att_input.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(att_yaml(req, outdir))
        return [exe, "-i", str(path), "--", *req.command]
    argv = [exe, "--att", "--kernel-trace"]
    regex = _kernel_regex(req)
    if regex:
        argv += ["--kernel-include-regex", regex]
    if req.att_iteration_range:
        argv += ["--kernel-iteration-range", req.att_iteration_range]
    argv += [
        "--att-target-cu",
        str(req.att_target_cu),
        "--att-shader-engine-mask",
        req.att_shader_engine_mask,
    ]
    if req.att_simd_select:
        argv += ["--att-simd-select", req.att_simd_select]
    if req.att_buffer_size:
        argv += ["--att-buffer-size", req.att_buffer_size]
    argv += ["-d", outdir, "--output-format", "csv", "json"]
    return [*argv, "--", *req.command]


def newest_dispatch(outdir: str) -> Path:
    """The most recently written `ui_output_agent_*_dispatch_*` folder with a code.json under `outdir`."""
    root = Path(outdir)
    found = [p.parent for p in root.rglob("code.json") if DISPATCH_RE.match(p.parent.name)]
    if not found:
        raise AttFormatError(
            f"{outdir}: rocprofv3 wrote no decoded ui_output_agent_*_dispatch_* folder",
            "check that the kernel filter matches a launch, that the trace decoder library is installed "
            "(--att-library-path / ROCPROF_ATT_LIBRARY_PATH), and rocprofv3's log for dropped data",
        )
    return max(found, key=lambda d: ((d / "code.json").stat().st_mtime_ns, d.name))
