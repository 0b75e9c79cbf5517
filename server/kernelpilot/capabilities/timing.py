"""Capability declarations for `time` (time_kernel)."""

from kernelpilot.capability import Capability
from kernelpilot.timing.models import TimeRequest, TimeResult

CAPABILITIES = [
    Capability(
        tool="time_kernel",
        command=("time",),
        summary="Time a kernel launch closure (CUDA events) or a command's printed metric, with spread.",
        description=(
            "Measure honestly before claiming anything. Either give `spec` = 'module:function' or "
            "'file.py:function' naming a factory that builds inputs once and returns a zero-arg launch "
            "closure (list of closures, or a `rotate` keyword, for input rotation); it is timed with CUDA "
            "events via torch when a GPU is present (warm-up, N runs, optional L2 flush of 2x the L2 size), "
            "else with a clearly labelled CPU perf_counter fallback. Or give `command` (argv list, never a "
            "shell string) and metric_regex (one group) or metric_json_key: the command runs warmup+N times "
            "and its printed metric is the sample. Returns median/min/max/IQR/CV, a stability verdict "
            "(stable when CV <= cv_threshold, default 2%), every sample, and the environment (GPU, driver, "
            "clocks, torch/triton/python versions, git commit and diff hash). Unstable? Do not compare."
        ),
        request=TimeRequest,
        result=TimeResult,
        target="kernelpilot.timing.core:time_kernel",
        positional=("spec",),
        long_running=True,
        takes_progress=True,
        toolset="measure",
        read_only=False,
        destructive=True,
        open_world=True,
    )
]
