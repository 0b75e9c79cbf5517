"""Request and result models of the workspace capabilities (cheap to import: pydantic only)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kernelpilot.foundation.models import Request, Result

Verdict = Literal["compute_bound", "memory_bound", "latency_bound", "sync_bound", "unknown"]

_WS_HELP = (
    "The workspace: a path to its folder, or its name under the workspaces root "
    "(--root, else $KERNELPILOT_WORKSPACES, else ./kernelpilot-workspaces)."
)
_ROOT_HELP = "Folder holding workspaces (default: $KERNELPILOT_WORKSPACES, else ./kernelpilot-workspaces)."
_COMMIT_HELP = "Commit the change in the workspace git repo (keep on: restart needs a clean tree)."


class WorkspaceRef(Request):
    """Fields shared by every request that acts on an existing workspace."""

    workspace: str = Field(description=_WS_HELP)
    root: str | None = Field(default=None, description=_ROOT_HELP)


# ---------------------------------------------------------------- init


class InitWorkspaceRequest(Request):
    name: str = Field(
        description="Workspace name: letters, digits, '.', '_' or '-'; no path separators, no '..'."
    )
    kernel: str = Field(description="Kernel source file to optimize; it is copied into the workspace.")
    platform: str = Field(
        description="Target GPU name or alias as the gpu-wiki knows it (e.g. H100, MI300X)."
    )
    framework: str = Field(description="Implementation framework (e.g. cuda, triton, hip, cutlass, pytorch).")
    dtype: str | None = Field(default=None, description="Main data type (e.g. bf16, fp16, fp32, fp8).")
    shape: list[str] = Field(default_factory=list, description="Problem shape, e.g. 'M=4096' or '4096x4096'.")
    goal: str | None = Field(default=None, description="One sentence: what the optimization should achieve.")
    flops: float | None = Field(
        default=None, gt=0, description="FLOPs of one kernel call (for the roofline)."
    )
    bytes_moved: float | None = Field(
        default=None, gt=0, description="Bytes one kernel call must move to/from DRAM (for the roofline)."
    )
    roofline_args: dict[str, Any] | None = Field(
        default=None,
        description="The op description for the roofline, as the fields of `kernelpilot roofline` "
        '(e.g. {"op": "softmax", "rows": 32768, "cols": 4096}; gemm: m, n, k; elementwise: numel, inputs, '
        "outputs), merged over the platform/dtype/flops/bytes the workspace passes. Fills the README's "
        "Roofline and Stop Conditions.",
    )
    allow_tbd: bool = Field(
        default=False,
        description="Create the workspace although neither roofline_args nor flops and bytes_moved are "
        "given (Roofline and Stop Conditions stay TBD, naming the argument that fills them). Without it, "
        "init refuses.",
    )
    wiki: list[str] = Field(default_factory=list, description="Extra gpu-wiki folders (user wikis).")
    root: str | None = Field(default=None, description=_ROOT_HELP)


class InitWorkspaceResult(Result):
    workspace: str = Field(description="Absolute path of the new workspace folder.")
    name: str
    kernel_file: str = Field(description="Kernel path relative to the workspace.")
    commit: str
    files: list[str] = Field(description="Files created, relative to the workspace.")
    gpu_id: str | None
    spec_lines: int = Field(description="Cited spec lines written to README.md.")
    gpu_note: str = Field("", description="Which part a generic --platform picked (H100: the SXM5), if any.")
    roofline: str = Field(description="'computed' or 'TBD: <why>'.")
    audit: str = Field(description="Citation audit of the written files: 'passed' or 'skipped: <why>'.")
    tbd: list[str] = Field(description="README fields left TBD.")

    def render_text(self) -> str:
        lines = [
            f"workspace {self.name} created at {self.workspace}",
            f"  kernel:   {self.kernel_file}",
            f"  commit:   {self.commit[:12]}",
            f"  gpu:      {self.gpu_id or 'TBD'} ({self.spec_lines} cited spec lines)",
            *([f"  note:     {self.gpu_note}"] if self.gpu_note else []),
            f"  roofline: {self.roofline}",
            f"  audit:    {self.audit}",
        ]
        if self.tbd:
            lines.append("  TBD:      " + ", ".join(self.tbd))
        lines.append("  files:    " + ", ".join(self.files))
        return "\n".join(lines)


# ---------------------------------------------------------------- memory


class MemoryCreateRequest(WorkspaceRef):
    change: str = Field(description="The one change this iteration made (for the baseline: 'baseline').")
    kind: Literal["baseline", "iteration", "exploration"] | None = Field(
        default=None,
        description="baseline: the workspace baseline (takes v0 when free); exploration: a timing taken to "
        "explore, never a parent, the best or the baseline. Default: baseline for the first baseline.json "
        "eval result or change starting with 'baseline', else iteration.",
    )
    version: int | None = Field(
        default=None, ge=0, description="Version N (default: next free; v0=baseline)."
    )
    parent: int | None = Field(
        default=None, ge=0, description="Version this one started from (default: latest unmasked)."
    )
    plan: str | None = Field(
        default=None,
        description="Plan followed: a path under plans/ or one line (default: the plans/v<N>-*.md that "
        "`kernelpilot plan` wrote for this version, if any).",
    )
    correct: bool | None = Field(default=None, description="Did the correctness check pass?")
    max_rel_err: float | None = Field(default=None, ge=0, description="Max relative error vs the reference.")
    tolerance: float | None = Field(default=None, ge=0, description="Relative tolerance of the check.")
    check_command: str | None = Field(default=None, description="Command that ran the correctness check.")
    median: float | None = Field(default=None, gt=0, description="Median time of the timed runs (in --unit).")
    spread_pct: float | None = Field(default=None, ge=0, description="Spread of the runs, % of the median.")
    unit: Literal["us", "ms", "s", "ns"] = Field(default="us", description="Unit of --median.")
    samples: int | None = Field(default=None, ge=1, description="Number of timed runs.")
    vs_baseline: float | None = Field(
        default=None, gt=0, description="Speed-up over the baseline (default: computed from baseline median)."
    )
    expected_speedup: float | None = Field(
        default=None, gt=0, description="Speed-up over the parent the plan claimed before measuring."
    )
    eval_result: str | None = Field(
        default=None,
        description="Path of a `kernelpilot eval` result.json: fills median (candidate_median, unit from a "
        "metric name ending _ns/_us/_ms/_s), vs_baseline (speedup), samples, source, correct=false on "
        "status correctness_failed, and correct=true with the task's correctness commands (task.json beside "
        "it) when the eval got past them. Explicit options win.",
    )
    perf_source: str | None = Field(
        default=None, description="Where the timing came from (result.json path)."
    )
    verdict: Verdict | None = Field(default=None, description="Bottleneck verdict of the profile.")
    profile: dict[str, Any] | None = Field(
        default=None,
        description="Full profile object (BottleneckVerdict fields memory_level/confidence/evidence, "
        "hotspots [{name, share_pct, duration_us}], report path); merged under --verdict.",
    )
    pitfall: list[str] = Field(
        default_factory=list, description="A pitfall met and its fix, written 'pitfall => fix'."
    )
    notes: str | None = Field(default=None, description="Free notes.")
    commit: bool = Field(default=True, description=_COMMIT_HELP)


# why a record shows no plan or no check (issue 42: the documented eval's record said `plan: -`, `passed=-`)
_NO_PLAN = {
    "baseline": "- (the baseline follows no plan)",
    "iteration": "- (none: no plans/v<N>-*.md from `kernelpilot plan` for this version, and no --plan)",
    "exploration": "- (an exploration: no plan given)",
}
_NOT_CHECKED = (
    " (no check recorded: the eval's task runs no correctness command, or no eval result was given; pass "
    "--correct and --max-rel-err from your check)"
)


class MemoryRecordResult(Result):
    workspace: str
    path: str = Field(description="Memory file relative to the workspace.")
    record: dict[str, Any]
    commit: str | None = Field(
        default=None, description="Workspace HEAD after the write (None if not committed)."
    )

    def render_text(self) -> str:
        r = self.record
        perf = r.get("performance", {})
        corr = r.get("correctness", {})
        prof = r.get("profile", {})
        rv = r.get("reverted")
        mark = "  [MASKED]" if r.get("masked") else (f"  [REVERTED: {rv.get('status')}]" if rv else "")
        ev = perf.get("eval") or {}
        lines = [
            f"{self.path}{mark}  (parent: {_v(r.get('parent'))})",
            f"  change:      {r.get('change')}",
            f"  plan:        {r.get('plan') or _NO_PLAN.get(str(r.get('kind')), _NO_PLAN['iteration'])}",
            f"  correctness: passed={_na(corr.get('passed'))} max_rel_err={_na(corr.get('max_rel_err'))}"
            + ("" if corr.get("passed") is not None else _NOT_CHECKED),
            f"  performance: median={_na(perf.get('median'))} {perf.get('unit', '')} "
            f"spread={_na(perf.get('spread_pct'))}% vs_baseline={_x(perf.get('vs_baseline'))} "
            f"vs_parent={_x(perf.get('vs_parent'))}",
            *(
                [f"  eval:        {ev.get('status')} {_x(ev.get('speedup'))} vs the eval's baseline.json"]
                if ev
                else []
            ),
            *(
                [f"  reverted:    {rv.get('reason')} (kernel restored from {_v(rv.get('restored_version'))})"]
                if rv
                else []
            ),
            f"  verdict:     {_na(prof.get('verdict'))}",
            f"  commit:      {(r.get('commit') or '-')[:12]}",
        ]
        for pf in r.get("pitfalls_and_fixes", []):
            lines.append(f"  pitfall:     {pf['pitfall']} => {pf['fix']}")
        return "\n".join(lines)


class MemoryReadRequest(WorkspaceRef):
    version: int | None = Field(default=None, ge=0, description="Version to read (default: latest unmasked).")
    include_masked: bool = Field(default=False, description="Allow reading a masked version.")


class MemoryUpdateRequest(WorkspaceRef):
    version: int = Field(ge=0, description="Version to update.")
    patch: dict[str, Any] = Field(
        description="JSON object deep-merged into the record, e.g. "
        '{"performance": {"median": 812.5}, "profile": {"verdict": "memory_bound"}}. '
        "version, created and masked cannot be patched (use memory mask/unmask)."
    )
    commit: bool = Field(default=True, description=_COMMIT_HELP)


class MemoryMaskRequest(WorkspaceRef):
    version: int = Field(ge=0, description="Version to mask (skipped by reads and summaries).")
    reason: str | None = Field(default=None, description="Why this line of work is dead.")
    commit: bool = Field(default=True, description=_COMMIT_HELP)


class MemoryUnmaskRequest(WorkspaceRef):
    version: int = Field(ge=0, description="Version to unmask.")
    commit: bool = Field(default=True, description=_COMMIT_HELP)


class MemorySummaryRequest(WorkspaceRef):
    include_masked: bool = Field(default=False, description="List masked versions too (marked).")


class SummaryEntry(Result):
    version: int
    parent: int | None
    change: str
    status: str = Field(
        description="kept | reverted:<eval status> (memory revert: change undone, record kept) | masked."
    )
    passed: bool | None
    max_rel_err: float | None
    median: float | None
    unit: str
    spread_pct: float | None
    vs_baseline: float | None
    vs_parent: float | None = None
    expected_speedup: float | None
    verdict: str | None
    masked: bool
    commit: str | None


class MemorySummaryResult(Result):
    workspace: str
    entries: list[SummaryEntry]
    masked_versions: list[int] = Field(description="Versions skipped because they are masked.")
    reverted_versions: list[int] = Field(
        default_factory=list, description="Versions whose change was reverted (listed, never best or latest)."
    )
    baseline_version: int | None
    best_version: int | None = Field(
        description="Correct (or unchecked) kept version (not masked, not reverted) with the lowest median."
    )
    latest_version: int | None = Field(
        description="Highest kept version: the current kernel and the default parent of the next one."
    )

    def render_text(self) -> str:
        head = (
            f"{'ver':>4} {'parent':>6} {'status':>18} {'ok':>5} {'median':>12} {'spread%':>8} {'x base':>7} "
            f"{'x parent':>8} {'verdict':>14}  change"
        )
        lines = [f"workspace {self.workspace}: {len(self.entries)} iterations", head]
        for e in self.entries:
            med = f"{e.median:g} {e.unit}" if e.median is not None else "-"
            lines.append(
                f"{('*' if e.masked else '') + 'v' + str(e.version):>4} {_v(e.parent):>6} {e.status:>18} "
                f"{_na(e.passed):>5} {med:>12} {_na(e.spread_pct):>8} {_x(e.vs_baseline):>7} "
                f"{_x(e.vs_parent):>8} {_na(e.verdict):>14}  {e.change}"
            )
        lines.append(
            f"baseline: {_v(self.baseline_version)}  best: {_v(self.best_version)}  "
            f"latest kept: {_v(self.latest_version)}  reverted: "
            + (", ".join(f"v{m}" for m in self.reverted_versions) or "none")
            + "  masked (skipped): "
            + (", ".join(f"v{m}" for m in self.masked_versions) or "none")
        )
        return "\n".join(lines)


class MemoryRestartRequest(WorkspaceRef):
    from_version: int = Field(
        ge=0,
        description="Mask this version and every later one, then restore the kernel of the last "
        "unmasked version before it.",
    )
    reason: str | None = Field(default=None, description="Why this line of work is abandoned.")


class MemoryRevertRequest(WorkspaceRef):
    version: int | None = Field(
        default=None, ge=0, description="Version whose change to undo (default: the latest kept version)."
    )
    status: (
        Literal[
            "neutral", "regressed", "correctness_failed", "failed", "unstable", "out_of_scope", "improved"
        ]
        | None
    ) = Field(
        default=None,
        description="The eval status that led to the revert (default: the one recorded from --eval-result).",
    )
    reason: str = Field(description="Why the change is undone (e.g. 'neutral 1.0003x: block 1024 -> 2048').")


class MemoryRestartResult(Result):
    workspace: str
    masked: list[int]
    restored_version: int | None = Field(
        description="Version whose kernel was restored (None: the initial kernel)."
    )
    restored_commit: str
    kernel_file: str
    commit: str = Field(description="Workspace HEAD after the restart commit.")

    def render_text(self) -> str:
        src = f"v{self.restored_version}" if self.restored_version is not None else "the initial kernel"
        return (
            f"masked: {', '.join(f'v{v}' for v in self.masked) or 'none'}\n"
            f"restored {self.kernel_file} from {src} (commit {self.restored_commit[:12]})\n"
            f"HEAD: {self.commit[:12]}"
        )


# ---------------------------------------------------------------- plan and report


class WritePlanRequest(WorkspaceRef):
    title: str = Field(description="Short title of the plan.")
    hypothesis: str = Field(description="Why this should help: the bottleneck evidence it addresses.")
    steps: list[str] = Field(default_factory=list, description="Ordered steps (one change axis each).")
    expected_speedup: float | None = Field(
        default=None, gt=0, description="Claimed speed-up over the parent."
    )
    for_version: int | None = Field(
        default=None, ge=0, description="Iteration this plan is for (default: next)."
    )
    risks: list[str] = Field(
        default_factory=list, description="What could go wrong (correctness, regressions)."
    )
    stop_when: str | None = Field(default=None, description="When to abandon this line of work.")
    commit: bool = Field(default=True, description=_COMMIT_HELP)


class WritePlanResult(Result):
    workspace: str
    path: str = Field(description="Plan file relative to the workspace.")
    version: int
    commit: str | None
    audit: str

    def render_text(self) -> str:
        return f"plan for v{self.version} written to {self.path} (audit: {self.audit})"


class RenderReportRequest(WorkspaceRef):
    kind: Literal["final", "baseline", "iteration"] = Field(
        default="final", description="final: whole history; baseline: v0; iteration: one version."
    )
    version: int | None = Field(
        default=None, ge=0, description="Version for kind=iteration (default: latest)."
    )
    html: bool = Field(default=True, description="Also write a self-contained HTML page with SVG charts.")
    att_dir: str | None = Field(
        default=None,
        description="AMD: a rocprofv3 thread-trace dispatch folder; adds its section to the HTML.",
    )
    stop_reason: str | None = Field(
        default=None,
        description="Final report: the stop condition that ended the loop (target met, budget spent, "
        "plateau: N neutral iterations, user stopped, ...). Default: 'the stop target was met' when the stop "
        "verdict is MET, else the report says it is not named.",
    )
    commit: bool = Field(default=True, description=_COMMIT_HELP)


class RenderReportResult(Result):
    workspace: str
    markdown: str = Field(description="Markdown report, relative to the workspace.")
    html: str | None = Field(description="HTML report, relative to the workspace.")
    versions: list[int] = Field(description="Unmasked versions the report covers.")
    audit: str
    commit: str | None

    def render_text(self) -> str:
        out = f"report: {self.markdown}"
        if self.html:
            out += f"\nhtml:   {self.html}"
        return out + f"\nversions: {', '.join(f'v{v}' for v in self.versions) or 'none'}\naudit: {self.audit}"


def _na(value: Any) -> str:
    return "-" if value is None else str(value)


def _v(value: Any) -> str:
    return "-" if value is None else f"v{value}"


def _x(value: Any) -> str:
    return "-" if value is None else f"{value:.2f}x"
