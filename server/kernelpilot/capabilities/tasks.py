"""Capability declarations for bounded tasks: `task create`, `eval`, `ledger`."""

from kernelpilot.capabilities import Capability
from kernelpilot.tasks.models import (
    CreateTaskRequest,
    CreateTaskResult,
    EvaluateRequest,
    EvaluateResult,
    LedgerRequest,
    LedgerResult,
)

CAPABILITIES = [
    Capability(
        tool="create_task",
        command=("task", "create"),
        summary="Define a bounded optimization task: eval command, metric, checks, allowed files.",
        description=(
            "Create task.json + TASK.md for one optimization target before editing code: the eval command "
            "(argv list, prints the metric; matched by metric_regex with one group or metric_json_key), "
            "direction (lower/higher is better), correctness commands (JSON argv lists, must exit 0), the "
            "files an agent may edit (allowed_file, repeatable; anything else makes evals out_of_scope), "
            "op/shapes/dtypes, runs/warm-up/CV threshold, and the environment with profiling and "
            "instrumentation variables (CUDA_LAUNCH_BLOCKING, NCU_*, NSYS_*, LD_PRELOAD, ROCPROF*, ...) "
            "stripped. Then run `eval --refresh-baseline` on a clean commit."
        ),
        request=CreateTaskRequest,
        result=CreateTaskResult,
        target="kernelpilot.tasks.create:create_task",
        read_only=False,
    ),
    Capability(
        tool="evaluate",
        command=("eval",),
        summary="Measure a candidate against the task baseline and give a verdict (or refresh the baseline).",
        description=(
            "With refresh_baseline: on a clean commit, run the correctness commands then the eval command "
            "warmup+N times and write baseline.json (commit, samples, stats). Without: check the baseline "
            "exists and is current (else needs_baseline), that only allowed files changed since the baseline "
            "commit (else out_of_scope), run correctness (else correctness_failed with output tail), measure "
            "(else failed with output tail), and give improved/regressed/neutral from the speed-up and its "
            "95% bootstrap CI, or unstable when either side's CV exceeds the threshold (no speed-up is "
            "claimed then). Writes result.json atomically and appends one ledger.jsonl line. Only "
            "'improved' is a win."
        ),
        request=EvaluateRequest,
        result=EvaluateResult,
        target="kernelpilot.tasks.evaluate:evaluate",
        positional=("task",),
        read_only=False,
        long_running=True,
        takes_progress=True,
        destructive=True,
        open_world=True,
    ),
    Capability(
        tool="ledger_show",
        command=("ledger",),
        summary="Show a task's ledger: every eval's status, speed-up, CI, commit and changed files.",
        description=(
            "Read the append-only ledger.jsonl of a task folder (one eval result per line, "
            "schema-versioned). "
            "Filter by status or keep the last N. Use it before proposing the next experiment, to avoid "
            "repeating what failed."
        ),
        request=LedgerRequest,
        result=LedgerResult,
        target="kernelpilot.tasks.ledger:ledger_show",
        positional=("task",),
    ),
]
