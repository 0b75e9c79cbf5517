"""Capability declarations for `time` (time_kernel) and `compare` (time_compare)."""

from kernelpilot.capabilities import Capability
from kernelpilot.timing.models import CompareRequest, CompareResult, TimeRequest, TimeResult

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
    ),
    Capability(
        tool="time_compare",
        command=("compare",),
        summary="Compare two launch closures timed together (paired ABBA): ratio, CI, verdict, clocks.",
        description=(
            "The way to tell whether B is faster than A on a GPU: never two separate `time` runs (a "
            "power-managed GPU drifts by several percent between runs). Loads factory `a` (baseline) and `b`"
            " (candidate) in one process, each apart from the other, checks they return the same output "
            "shapes and dtypes, then times them interleaved in A,B,B,A and B,A,A,B blocks, each sample as "
            "`time` takes it (cold: L2 flushed, or warm), while a thread reads the SM clock, power, "
            "temperature and throttle reasons (NVML / amdsmi); blocks run under a power or thermal slowdown "
            "beyond the threshold are dropped and redone. Blocks are added until the CI of the median "
            "per-block ratio B/A is tight or the wall budget ends (a 1-5 ms kernel: seconds). Verdict "
            "improved / regressed when the whole CI, widened by placement_allowance, lies beyond the "
            "min_effect band, else neutral, or unstable when the ratio is not resolved (or there is none: a "
            "side timed at 0 us or less did no work where the timer looks). Returns the ratio, "
            "CI, pairs, both sides' absolute medians, every sample and the clock evidence (clocks seen, "
            "reasons, drops, whether the GPU held its clock)."
        ),
        request=CompareRequest,
        result=CompareResult,
        target="kernelpilot.timing.compare:time_compare",
        positional=("a", "b"),
        long_running=True,
        takes_progress=True,
        toolset="measure",
        read_only=False,
        destructive=True,
        open_world=True,
    ),
]
