"""Capability declarations for workload triage: `workload run|read|diff|report|isolate`."""

from kernelpilot.capabilities import Capability
from kernelpilot.workload.models import (
    WorkloadDiffRequest,
    WorkloadDiffResult,
    WorkloadIsolateRequest,
    WorkloadIsolateResult,
    WorkloadReadRequest,
    WorkloadReportRequest,
    WorkloadReportResult,
    WorkloadResult,
    WorkloadRunRequest,
)

_C = "kernelpilot.workload.core"

CAPABILITIES = [
    Capability(
        tool="workload_run",
        command=("workload", "run"),
        summary="Triage a model step: which kernels hold its time and how many µs a fix could win back.",
        description=(
            "Start here when the user names a model, a step or a program instead of a kernel. `spec` = "
            "'file.py:factory' whose closure runs one step (as `time` takes it): warm-up, CUDA-event step "
            "times, then `steps` steps under torch.profiler (CUPTI/roctracer), each step separable. Or "
            "`command` with `region` (NVTX range) or cudaProfilerStart/Stop: ncu per-launch durations on "
            "NVIDIA (no idle time: said in the result), rocprofv3 kernel trace on AMD. Returns the step's "
            "wall/busy/idle time, every idle µs by cause (launch-bound with the launch->start delay and "
            "queue depth per stream, synchronization by API and op, memory copies by direction and bytes, "
            "CPU time in ops, queued, unexplained) and the largest gaps, kernels per step with share, "
            "cumulative "
            "share, launches, median/min/max, category, ATen op, nn.Module path, range and phase; with "
            "`drill` (default) one ncu launch per hot kernel (roofline position, bound) and ISA facts "
            "joined from the code objects the process loaded; and opportunities in µs/step with formulas "
            "(headroom to roof, launch overhead/idle a graph removes, fusion chains), the top one with its "
            "next command. `try_remedies` (spec only, when launch overhead leads): the step captured as a "
            "CUDA graph and compiled with torch.compile(mode='reduce-overhead'), outputs checked against "
            "eager, each timed paired against eager: measured µs/step and saving with intervals beside the "
            "estimate, or why a remedy could not apply. `out` keeps the JSON for `workload diff`."
        ),
        request=WorkloadRunRequest,
        result=WorkloadResult,
        target=f"{_C}:run_workload",
        positional=("spec",),
        long_running=True,
        takes_progress=True,
        read_only=False,
        destructive=True,
        open_world=True,
    ),
    Capability(
        tool="workload_read",
        command=("workload", "read"),
        summary="Break down a recorded trace (Kineto JSON, rocprofv3, nsys stats or ncu CSV) per step.",
        description=(
            "Reads a PyTorch profiler Chrome trace (kernels with their launch calls, ATen ops, "
            "record_function ranges, nn.Module paths, steps from ProfilerStep#/kernelpilot.step# ranges, "
            "graph replays), a rocprofv3 kernel trace or kernel stats CSV, an `nsys stats` cuda_gpu_trace "
            "or cuda_gpu_kern_sum CSV, or an ncu raw CSV; format detected from the content, gzip too "
            "(`.json.gz` of tensorboard_trace_handler(use_gzip=True)). Same "
            "breakdown and opportunities as workload_run, without the drill-down. A truncated or foreign "
            "file is a typed error naming what is wrong."
        ),
        request=WorkloadReadRequest,
        result=WorkloadResult,
        target=f"{_C}:read_workload",
        positional=("path",),
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="workload_diff",
        command=("workload", "diff"),
        summary="Compare two workload captures: µs per step per kernel and category, with a CI.",
        description=(
            "How a user checks that a kernel change helped the whole step. Matches kernels by normalised "
            "name; per kernel, per category, for the step (wall, CUDA-event step, busy, idle) and per idle "
            "cause gives A and B µs/step, the change with a bootstrap confidence interval over steps, and a "
            "verdict (no change within threshold_pct, faster/slower when the interval excludes zero, "
            "unclear, new, gone). The headline names the step time first, then what changed most."
        ),
        request=WorkloadDiffRequest,
        result=WorkloadDiffResult,
        target=f"{_C}:diff_workload",
        positional=("a", "b"),
    ),
    Capability(
        tool="workload_report",
        command=("workload", "report"),
        summary="Write the HTML report of a workload result (bars, cumulative share, opportunities).",
        description=(
            "Renders a saved workload result JSON as a self-contained HTML page (no scripts): the "
            "opportunity table with formulas, breakdown bars by kernel coloured by category, the "
            "cumulative-share curve with the hot-set line, every kernel and the groups."
        ),
        request=WorkloadReportRequest,
        result=WorkloadReportResult,
        target=f"{_C}:report_workload",
        positional=("path",),
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="workload_isolate",
        command=("workload", "isolate"),
        summary="Write a standalone benchmark and a reference contract of one kernel of a PyTorch trace.",
        description=(
            "The step from a hot kernel of the triage to the kernel loop. `path`: a PyTorch profiler trace "
            "recorded with record_shapes (or the result JSON of `workload run --save-trace`/`read --out`); "
            "`kernel`: the row number of the workload table or a part of the kernel's name. From the ATen op "
            "that launched it (by External id; a backend-private op such as _cudnn_attention_forward through "
            "its public caller) writes bench_<name>.py whose make() builds inputs of the recorded shapes, "
            "dtypes and strides and calls the same op with the recorded scalar arguments (for "
            "`kernelpilot time`), contract_<name>.py/.json (docs/guard.md: the op in float64 as reference, "
            "the recorded dtype and its default tolerance, the recorded shape timed first and up to two more "
            "the op ran at), and the roofline arguments for `workspace init` where the op has a model (gemm, "
            "attention, normalization, softmax, elementwise, reduction). Names what the trace did not keep "
            "(TensorList members, Python float lists, wrapped scalars) and what was used instead. A "
            "rocprofv3, nsys or ncu table, a trace without shapes, a kernel no ATen op launched (Triton from "
            "torch.compile: the inductor cache holds its source) are typed errors with the fix."
        ),
        request=WorkloadIsolateRequest,
        result=WorkloadIsolateResult,
        target="kernelpilot.workload.isolate:isolate_workload",
        positional=("path",),
        read_only=False,
        idempotent=True,
    ),
]
