"""Capability declarations for optimization workspaces: init, iteration memory, plans, reports."""

from kernelpilot.capabilities import Capability
from kernelpilot.workspace.models import (
    InitWorkspaceRequest,
    InitWorkspaceResult,
    MemoryCreateRequest,
    MemoryMaskRequest,
    MemoryReadRequest,
    MemoryRecordResult,
    MemoryRestartRequest,
    MemoryRestartResult,
    MemoryRevertRequest,
    MemorySummaryRequest,
    MemorySummaryResult,
    MemoryUnmaskRequest,
    MemoryUpdateRequest,
    RenderReportRequest,
    RenderReportResult,
    WritePlanRequest,
    WritePlanResult,
)

_M = "kernelpilot.workspace.memory"

CAPABILITIES = [
    Capability(
        tool="init_workspace",
        command=("workspace", "init"),
        summary="Create a git-tracked optimization workspace with a cited README (Step 0).",
        description=(
            "Start every kernel optimization here. Creates <root>/<name>/ (root: --root, else "
            "$KERNELPILOT_WORKSPACES, else ./kernelpilot-workspaces) with a copy of the kernel, "
            "memory/, plans/, "
            "profiles/, reports/, .gitignore and workspace.json, initializes git and commits. "
            "README.md holds "
            "Task Context, Hardware Spec (gpu-wiki citations only), Roofline analysis and Stop Conditions "
            "(computed when --flops and --bytes-moved or --roofline-args are given); unknown fields say TBD. "
            "Refuses to leave them TBD silently: without --roofline-args (or --flops/--bytes-moved) it fails "
            "naming them, unless --allow-tbd. "
            "Refuses names with separators or '..', an existing non-empty target, a missing kernel file; "
            "on any failure nothing is left behind."
        ),
        request=InitWorkspaceRequest,
        result=InitWorkspaceResult,
        target="kernelpilot.workspace.core:init_workspace",
        positional=("name",),
        read_only=False,
    ),
    Capability(
        tool="memory_create",
        command=("memory", "create"),
        summary="Record one iteration (memory/v<N>.json) and commit the kernel state it measured.",
        description=(
            "Call after each iteration's correctness check and timing (v0 = baseline). Commits the current "
            "kernel (commit hash stored in the record, so restart can restore it), then writes "
            "memory/v<N>.json validated against the shipped schema: change, plan, correctness (passed, "
            "max rel err), performance (median, spread, unit; vs_baseline = the first unmasked version's "
            "median / this one; vs_parent = the parent's / this one), profile verdict (--verdict or "
            "--profile JSON with evidence/hotspots), pitfalls ('pitfall => fix'). --eval-result takes an "
            "eval result.json or baseline.json and keeps eval's verdict under performance.eval (its "
            "speed-up is vs the task's baseline.json, usually the parent)."
        ),
        request=MemoryCreateRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_create",
        read_only=False,
    ),
    Capability(
        tool="memory_read",
        command=("memory", "read"),
        summary="Read one iteration record (default: latest unmasked).",
        description=(
            "Read memory/v<N>.json of a workspace. Without --version returns the latest unmasked iteration; "
            "a masked version is refused unless --include-masked. Use it to pick up where "
            "another agent stopped."
        ),
        request=MemoryReadRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_read",
    ),
    Capability(
        tool="memory_update",
        command=("memory", "update"),
        summary="Patch fields of an iteration record (deep merge, schema-checked, committed).",
        description=(
            "Deep-merge a JSON object into memory/v<N>.json, e.g. to add the profile verdict once profiling "
            'finished: --patch \'{"profile": {"verdict": "memory_bound"}}\'. The result must pass the '
            "schema (errors name the field path). version/created/masked cannot be patched."
        ),
        request=MemoryUpdateRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_update",
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Capability(
        tool="memory_mask",
        command=("memory", "mask"),
        summary="Mask an iteration so reads and summaries skip it (a dead line of work).",
        description=(
            "Mark memory/v<N>.json masked (kept on disk and in git, skipped by memory read/summary and "
            "reports). Use memory_restart to mask a whole tail of versions and restore the kernel."
        ),
        request=MemoryMaskRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_mask",
        positional=("version",),
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="memory_unmask",
        command=("memory", "unmask"),
        summary="Unmask an iteration so reads and summaries see it again.",
        description="Clear the masked flag of memory/v<N>.json (the kernel file is not touched).",
        request=MemoryUnmaskRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_unmask",
        positional=("version",),
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="memory_summary",
        command=("memory", "summary"),
        summary="Table of iterations (masked ones skipped): correctness, median, speed-up, verdict.",
        description=(
            "One line per unmasked iteration plus the baseline, best (fastest correct) and "
            "latest versions and "
            "the list of masked versions. Read this first when resuming a workspace."
        ),
        request=MemorySummaryRequest,
        result=MemorySummaryResult,
        target=f"{_M}:memory_summary",
    ),
    Capability(
        tool="memory_restart",
        command=("memory", "restart"),
        summary="Partial restart: mask v>=N and restore the kernel of the last unmasked version before N.",
        description=(
            "Abandon a line of work in one step: masks every version >= --from, checks out the kernel file "
            "from the commit of the last unmasked version below it (the initial kernel if none) and commits. "
            "Refuses when the workspace git tree has uncommitted changes (commit or discard them first)."
        ),
        request=MemoryRestartRequest,
        result=MemoryRestartResult,
        target=f"{_M}:memory_restart",
        short={"from_version": "--from"},
        read_only=False,
        destructive=True,
    ),
    Capability(
        tool="memory_revert",
        command=("memory", "revert"),
        summary="Undo one iteration's change but keep its record visible (status reverted, with why).",
        description=(
            "For a neutral, regressed or failed iteration: restores the kernel file from the version it "
            "started from (its parent), marks memory/v<N>.json `reverted` with the eval status and the "
            "reason, and commits. Unlike memory_restart it masks nothing: summaries and reports keep "
            "listing the iteration as reverted; it is never the best or latest version nor the next "
            "parent. Refuses the baseline, a masked or reverted version, and a dirty workspace tree."
        ),
        request=MemoryRevertRequest,
        result=MemoryRecordResult,
        target=f"{_M}:memory_revert",
        read_only=False,
        destructive=True,
    ),
    Capability(
        tool="write_plan",
        command=("plan",),
        summary="Write an optimization plan (plans/v<N>-<slug>.md) from the template.",
        description=(
            "Before changing the kernel, write the plan: hypothesis (the bottleneck evidence it addresses), "
            "steps (one change axis each), the claimed speed-up (compared with the measurement in the final "
            "report), risks and when to abandon. Rendered with the workspace's cited stop "
            "conditions; committed."
        ),
        request=WritePlanRequest,
        result=WritePlanResult,
        target="kernelpilot.workspace.report:write_plan",
        read_only=False,
    ),
    Capability(
        tool="render_report",
        command=("report",),
        summary="Render a baseline, iteration or final report (Markdown + self-contained HTML, SVG charts).",
        description=(
            "Writes reports/<kind>.md and .html from the workspace's unmasked memory: hotspots, "
            "history table, "
            "claim vs measured, cited hardware spec, roofline chart and speed-up history chart "
            "(inline SVG, no "
            "scripts). Every citation in the output is audited against the gpu-wiki; then it is committed."
        ),
        request=RenderReportRequest,
        result=RenderReportResult,
        target="kernelpilot.workspace.report:render_report",
        read_only=False,
        idempotent=True,
    ),
]
