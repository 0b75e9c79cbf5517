"""Request and result models of the `exp_*` tools / `kernelpilot exp ...` commands.

Kept free of store and SQL imports so that listing capabilities stays cheap.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from kernelpilot.experiments import render
from kernelpilot.experiments.record import Environment, ExperimentRecord, Links, Profiling, Status
from kernelpilot.foundation.models import Request, Result

DB_HELP = (
    "Experiment store: a SQLite file path or a postgresql:// URL. Default: $KERNELPILOT_DB, else "
    "[experiments] db in the nearest kernelpilot.toml, else $XDG_DATA_HOME/kernelpilot/experiments.db "
    "(~/.local/share/kernelpilot/experiments.db)."
)
TIME_HELP = "ISO-8601 date or time (UTC when no offset), e.g. 2026-11-01 or 2026-11-01T12:00:00Z."


class _DbRequest(Request):
    db: str | None = Field(None, description=DB_HELP)


class _Filters(_DbRequest):
    operator: str | None = Field(None, description="Only this operator signature (exact).")
    dtype: str | None = Field(None, description="Only this dtype signature (exact).")
    gpu: str | None = Field(None, description="Only this GPU id (exact).")
    arch: str | None = Field(None, description="Only this architecture, e.g. sm_90 (exact).")
    tag: list[str] = Field(default_factory=list, description="Only records carrying every one of these tags.")
    since: str | None = Field(None, description="Only records created at or after this time. " + TIME_HELP)
    until: str | None = Field(None, description="Only records created at or before this time. " + TIME_HELP)
    text: str | None = Field(
        None, description="Words that must all appear in the summary or description (word prefixes match)."
    )


class ExpCreateRequest(_DbRequest):
    """Record one attempt."""

    operator: str = Field(description="Operator signature, e.g. 'gemm' or 'softmax(rows)'.")
    summary: str = Field(description="One line, <= 80 chars: '<what> - <result or why it failed>'.")
    status: Status = Field(description="Outcome of the attempt.")
    score: float | None = Field(None, description="Speed-up vs the parent's baseline (> 1 is better).")
    parent_id: str | None = Field(None, description="Id of the record this attempt started from.")
    id: str | None = Field(None, description="Record id; generated when omitted.")
    created: str | None = Field(None, description="When it was made (default now). " + TIME_HELP)
    dtype: str = Field("", description="Dtype signature, e.g. 'bf16*bf16->fp32'.")
    shapes: dict[str, int | list[int]] = Field(
        default_factory=dict, description="Shapes by name: {'M': 4096}."
    )
    gpu: str = Field("", description="Target GPU id, e.g. h100-sxm5.")
    arch: str = Field("", description="Target architecture, e.g. sm_90 or gfx942.")
    environment: Environment | None = Field(None, description="{driver, toolkit, libraries{}, other{}}.")
    base_commit: str | None = Field(None, description="Commit the change was made on.")
    diff_hash: str | None = Field(None, description="Hash of the change's diff.")
    approach: str = Field("", description="What was changed and how.")
    result: str = Field("", description="What was measured.")
    why: str = Field("", description="Why it helped or failed: the part future attempts need most.")
    insight: str = Field("", description="Key insight to carry forward.")
    raw_result: dict[str, Any] = Field(default_factory=dict, description="Raw result, e.g. per-kernel times.")
    is_buggy: bool = Field(False, description="The attempt produced a bug (needs --error-message).")
    error_message: str | None = Field(None, description="The error message when buggy.")
    profiling: Profiling | None = Field(
        None, description="{verdicts: [bottleneck verdicts], key_metrics: {}}."
    )
    tags: list[str] = Field(default_factory=list, description="Tags, e.g. tiling, tma, unroll.")
    links: Links | None = Field(None, description="{workspace, ledger, result_json, files[]} relative paths.")


class ExpUpdateRequest(_DbRequest):
    """Change fields of an existing record."""

    id: str = Field(description="Id of the record to update.")
    status: Status | None = Field(None, description="New status.")
    score: float | None = Field(None, description="New score (speed-up vs parent baseline).")
    summary: str | None = Field(None, description="New one-line summary (<= 80 chars, '<what> - <result>').")
    approach: str | None = Field(None, description="New description.approach.")
    result: str | None = Field(None, description="New description.result.")
    why: str | None = Field(None, description="New description.why.")
    insight: str | None = Field(None, description="New description.insight.")
    is_buggy: bool | None = Field(None, description="Mark buggy or not (buggy needs an error message).")
    error_message: str | None = Field(None, description="New error message.")
    add_tag: list[str] = Field(default_factory=list, description="Tags to add.")
    remove_tag: list[str] = Field(default_factory=list, description="Tags to remove.")
    set: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Any other record fields to replace, e.g. {'profiling': {...}, 'links': {...}, 'score': null}."
        ),
    )


class ExpGetRequest(_DbRequest):
    """Show one record."""

    id: str = Field(description="Record id.")


class ExpListRequest(_Filters):
    """List records, newest first."""

    status: list[Status] = Field(
        default_factory=list, description="Only these statuses (repeat for several)."
    )
    parent_id: str | None = Field(None, description="Only direct children of this record.")
    buggy: bool | None = Field(
        None, description="Only buggy (--buggy) or only non-buggy (--no-buggy) records."
    )
    limit: int = Field(20, ge=1, le=1000, description="At most this many records.")
    offset: int = Field(0, ge=0, description="Skip this many (paging).")
    order: Literal["newest", "oldest"] = Field("newest", description="Sort by creation time.")


class ExpTopRequest(_Filters):
    """Best attempts by score."""

    limit: int = Field(20, ge=1, le=1000, description="How many (per operator with --per-operator).")
    per_operator: bool = Field(False, description="Rank within each operator separately.")
    status: list[Status] = Field(default_factory=list, description="Only these statuses.")


class ExpSimilarRequest(_DbRequest):
    """Records close to a planned change."""

    operator: str = Field("", description="Operator signature of the planned change.")
    dtype: str = Field("", description="Dtype signature.")
    arch: str = Field("", description="Target architecture, e.g. sm_90.")
    gpu: str = Field("", description="Target GPU id (used when arch is not given or not stored).")
    change: str = Field("", description="The planned change in a few words, e.g. 'unroll k loop by 4'.")
    limit: int = Field(10, ge=1, le=200, description="At most this many matches.")
    min_similarity: float = Field(0.3, ge=0.0, le=1.0, description="Drop matches below this similarity.")
    failures_only: bool = Field(
        False, description="Only attempts that failed (regression/crash/incorrect/...)."
    )


class ExpLineageRequest(_DbRequest):
    """Ancestors and descendants of a record."""

    id: str = Field(description="Record id.")
    max_nodes: int = Field(500, ge=1, le=100000, description="At most this many descendants.")


class ExpFailuresRequest(_Filters):
    """What not to try again."""

    include_neutral: bool = Field(True, description="Also list attempts with no measurable gain.")
    limit: int = Field(20, ge=1, le=1000, description="At most this many.")


class ExpImportRequest(_DbRequest):
    """Load records from JSONL."""

    path: str = Field(description="JSONL file, one record per line (as written by exp export).")
    on_conflict: Literal["error", "skip", "replace"] = Field(
        "error", description="When an id already exists: fail the whole import, skip it, or replace it."
    )


class ExpExportRequest(_Filters):
    """Write records to JSONL."""

    out: str = Field(description="JSONL file to write (replaced atomically).")


class ExpIngestRequest(_DbRequest):
    """Record eval results."""

    path: str = Field(
        description="An eval result.json, a ledger.jsonl (all lines, or --line N), or a task's baseline.json "
        "(recorded as the baseline: success, score 1.0, tag baseline)."
    )
    line: int | None = Field(None, ge=1, description="Only this 1-based line of a ledger.jsonl.")
    operator: str | None = Field(None, description="Operator signature (default: the eval task name).")
    dtype: str = Field("", description="Dtype signature.")
    gpu: str | None = Field(None, description="GPU id (default: from the eval environment, if named).")
    arch: str = Field("", description="Target architecture, e.g. sm_90.")
    change: str | None = Field(None, description="What the change was, in a few words (summary '<what>').")
    parent_id: str | None = Field(None, description="Record this attempt started from.")
    tags: list[str] = Field(default_factory=list, description="Tags for the new record(s).")
    workspace: str | None = Field(
        None, description="Workspace root; links are stored relative to it (default: current directory)."
    )


# ---------------- results ----------------


class RecordResult(Result):
    db: str
    action: Literal["created", "updated", "found"]
    record: ExperimentRecord

    def render_text(self) -> str:
        head = "" if self.action == "found" else f"{self.action} {self.record.id} in {self.db}\n"
        return head + render.detail(self.record)


class _StoreRead(Result):
    """A result read from the store, which names the stored records it had to leave out."""

    unreadable: list[str] = Field(
        default_factory=list,
        description="Stored records this read left out because they no longer validate ('<id>: <why>'); "
        "the others are answered as usual. Export the store (bad records are named and left out), fix or "
        "drop them, import into a new store.",
    )

    def render_text(self) -> str:
        return self._body() + self.unreadable_text()

    def _body(self) -> str:
        return ""

    def unreadable_text(self) -> str:
        """The trailing note naming the left-out records ('' when there are none)."""
        if not self.unreadable:
            return ""
        shown = "\n".join(f"  {u}" for u in self.unreadable[:10])
        more = f"\n  (+{len(self.unreadable) - 10} more)" if len(self.unreadable) > 10 else ""
        return f"\n{len(self.unreadable)} stored record(s) left out, invalid:\n{shown}{more}"


class RecordListResult(_StoreRead):
    db: str
    total: int = Field(description="Records matching the filters (all pages).")
    offset: int
    records: list[ExperimentRecord]

    def _body(self) -> str:
        shown = len(self.records)
        head = (
            f"{self.total} record(s) match; showing {self.offset + 1}-{self.offset + shown}" if shown else ""
        )
        return (head + "\n" if head else "") + render.table(self.records)


class TopResult(_StoreRead):
    db: str
    per_operator: bool
    records: list[ExperimentRecord]

    def _body(self) -> str:
        if not self.per_operator:
            return (
                f"top {len(self.records)} by score (speed-up vs parent; buggy/crash/incorrect excluded)\n"
                + (render.table(self.records))
            )
        out: list[str] = []
        ops = list(dict.fromkeys(r.operator for r in self.records))
        for op in ops:
            recs = [r for r in self.records if r.operator == op]
            out.append(f"== {op}: top {len(recs)}\n" + render.table(recs))
        return "\n".join(out) if out else "(no scored records)"


class SimilarMatch(Result):
    similarity: float = Field(description="0..1; see kernelpilot.experiments.similarity for the formula.")
    components: dict[str, float | None] = Field(
        description="operator, dtype, arch, change parts (None = unused)."
    )
    record: ExperimentRecord


class SimilarResult(_StoreRead):
    db: str
    candidates: int = Field(description="Records scored.")
    matches: list[SimilarMatch]

    def _body(self) -> str:
        if not self.matches:
            return f"no similar records (scored {self.candidates})"
        body = render.table(
            [m.record for m in self.matches], extra=[f"{m.similarity:.2f}" for m in self.matches]
        )
        whys = [
            f"  {m.record.id}: why: {m.record.why_text()[:160]}"
            for m in self.matches
            if m.record.status.value != "success"
        ]
        return body + ("\nfailed/neutral ones:\n" + "\n".join(whys) if whys else "")


class LineageResult(_StoreRead):
    db: str
    record: ExperimentRecord
    ancestors: list[ExperimentRecord] = Field(description="Parent first, root last.")
    descendants: list[ExperimentRecord] = Field(description="Every record below, oldest first.")

    def _body(self) -> str:
        return render.lineage_tree(self.record, self.ancestors, self.descendants)


class FailuresResult(_StoreRead):
    db: str
    total: int
    records: list[ExperimentRecord]

    def _body(self) -> str:
        more = (
            f"\n({self.total - len(self.records)} more; raise --limit)"
            if self.total > len(self.records)
            else ""
        )
        return render.failures(self.records) + more


class ImportResult(Result):
    db: str
    path: str
    read: int
    imported: int
    skipped: int

    def render_text(self) -> str:
        return (
            f"read {self.read} record(s) from {self.path}: imported {self.imported}, skipped {self.skipped}"
        )


class ExportResult(_StoreRead):
    db: str
    path: str
    count: int

    def _body(self) -> str:
        return f"exported {self.count} record(s) to {self.path}"


class IngestResult(_StoreRead):
    db: str
    created: list[str] = Field(description="Ids of new records.")
    existing: list[str] = Field(description="Ids already in the store (same eval ingested before).")
    records: list[ExperimentRecord]

    def _body(self) -> str:
        head = f"ingested {len(self.created)} new, {len(self.existing)} already present"
        return head + "\n" + render.table(self.records)


class ExpUpgradeRequest(_DbRequest):
    """Migrate an older-schema SQLite store to the current schema, keeping a copy of the old file."""


class UpgradeResult(Result):
    db: str
    from_version: int | None = Field(
        description="Schema version before (None: the store was already current)."
    )
    to_version: int = Field(description="Schema version now.")
    backup: str | None = Field(
        description="Copy of the old file, beside it (None when nothing was migrated)."
    )

    def render_text(self) -> str:
        if self.from_version is None:
            return f"{self.db} is already at schema version {self.to_version}: nothing to do"
        return (
            f"upgraded {self.db} from schema version {self.from_version} to {self.to_version}; "
            f"the old file is kept as {self.backup}"
        )
