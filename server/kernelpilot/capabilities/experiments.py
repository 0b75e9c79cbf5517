"""Capability declarations for the experiment database (`kernelpilot exp ...`, MCP `exp_*`)."""

from kernelpilot.capabilities import Capability
from kernelpilot.experiments.api import (
    ExpCreateRequest,
    ExpExportRequest,
    ExpFailuresRequest,
    ExpGetRequest,
    ExpImportRequest,
    ExpIngestRequest,
    ExpLineageRequest,
    ExpListRequest,
    ExportResult,
    ExpSimilarRequest,
    ExpTopRequest,
    ExpUpdateRequest,
    ExpUpgradeRequest,
    FailuresResult,
    ImportResult,
    IngestResult,
    LineageResult,
    RecordListResult,
    RecordResult,
    SimilarResult,
    TopResult,
    UpgradeResult,
)

_OPS = "kernelpilot.experiments.ops"

CAPABILITIES = [
    Capability(
        tool="exp_create",
        command=("exp", "create"),
        summary="Record one optimization attempt (success or failure) in the experiment database.",
        description=(
            "Write a record after every iteration, failures above all: operator/dtype/arch, a one-line "
            "summary '<what> - <result or why it failed>' (<= 80 chars), status (success, regression, "
            "neutral, crash, incorrect, abandoned), score = speed-up vs the parent's baseline (> 1 better), "
            "parent_id for lineage, and why it worked or failed. Prefer exp_ingest when you have an eval "
            "result.json or ledger line. Invalid records are refused with the field named."
        ),
        request=ExpCreateRequest,
        result=RecordResult,
        target=f"{_OPS}:create",
        read_only=False,
    ),
    Capability(
        tool="exp_update",
        command=("exp", "update"),
        summary="Change fields of a recorded attempt (status, score, why, tags, ...).",
        description=(
            "Update an existing record, e.g. after a correctness check fails later (--status incorrect "
            "--is-buggy --error-message ...) or to add the 'why'. id and created cannot change. Other "
            "fields can be replaced with --set '{\"field\": value}'."
        ),
        request=ExpUpdateRequest,
        result=RecordResult,
        target=f"{_OPS}:update",
        positional=("id",),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Capability(
        tool="exp_get",
        command=("exp", "get"),
        summary="Show one experiment record in full.",
        description=(
            "Show every field of one record: target, environment, description, error, verdicts, links."
        ),
        request=ExpGetRequest,
        result=RecordResult,
        target=f"{_OPS}:get",
        positional=("id",),
    ),
    Capability(
        tool="exp_list",
        command=("exp", "list"),
        summary="List experiment records with filters (operator, dtype, arch, status, tag, dates, text).",
        description=(
            "List records newest first, filtered by operator, dtype, gpu, arch, status, tags, date range "
            "(--since/--until) and words in the summary or description (--text). Use it to see what was "
            "already tried for this kernel."
        ),
        request=ExpListRequest,
        result=RecordListResult,
        target=f"{_OPS}:list_records",
    ),
    Capability(
        tool="exp_top",
        command=("exp", "top"),
        summary="Best attempts by score (speed-up), optionally per operator.",
        description=(
            "Rank scored records by speed-up, best first, excluding buggy, crashed and incorrect attempts. "
            "Use --per-operator to see the best of each operator. Filters as exp_list."
        ),
        request=ExpTopRequest,
        result=TopResult,
        target=f"{_OPS}:top",
    ),
    Capability(
        tool="exp_similar",
        command=("exp", "similar"),
        summary="Find recorded attempts close to a planned change (operator, dtype, arch, change words).",
        description=(
            "Call BEFORE making a change: returns past attempts ranked by similarity (0..1 = 0.30 operator + "
            "0.15 dtype + 0.15 arch + 0.40 word overlap of the change with the stored summary; components "
            "left out of the query are dropped). Read the failed ones' 'why' before repeating them."
        ),
        request=ExpSimilarRequest,
        result=SimilarResult,
        target=f"{_OPS}:similar",
    ),
    Capability(
        tool="exp_lineage",
        command=("exp", "lineage"),
        summary="Ancestors and descendants of a record, as a tree.",
        description="Show how an attempt was reached (parent chain to the root) and everything built on it.",
        request=ExpLineageRequest,
        result=LineageResult,
        target=f"{_OPS}:lineage",
        positional=("id",),
    ),
    Capability(
        tool="exp_failures",
        command=("exp", "failures"),
        summary="What not to try again: failed, buggy and neutral attempts with why.",
        description=(
            "List regressions, crashes, incorrect results, abandoned (and by default neutral) attempts with "
            "the reason each failed, newest first. Filter by operator/dtype/arch/tag/text. Read this before "
            "planning the next iteration."
        ),
        request=ExpFailuresRequest,
        result=FailuresResult,
        target=f"{_OPS}:failures",
    ),
    Capability(
        tool="exp_import",
        command=("exp", "import"),
        summary="Import records from a JSONL file (as written by exp export).",
        description=(
            "Load records from JSONL in one transaction: all or nothing. Existing ids fail the import "
            "unless --on-conflict skip or replace. Records are validated; errors name the line and field."
        ),
        request=ExpImportRequest,
        result=ImportResult,
        target=f"{_OPS}:import_records",
        positional=("path",),
        read_only=False,
        destructive=True,
    ),
    Capability(
        tool="exp_upgrade",
        command=("exp", "upgrade"),
        summary="Migrate an older experiment store to the current schema, keeping a copy of the old file.",
        description=(
            "Other exp commands refuse a store of an older schema and leave it untouched; this one copies it "
            "to <file>.v<N>.bak beside it (SQLite's backup API), then migrates it in one transaction and "
            "names the copy. A store already at the current schema is left as it is."
        ),
        request=ExpUpgradeRequest,
        result=UpgradeResult,
        target=f"{_OPS}:upgrade",
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="exp_export",
        command=("exp", "export"),
        summary="Export records to a JSONL file (exact round trip with exp import).",
        description=(
            "Write every record (or those matching the filters), oldest first, one JSON object per line; "
            "importing the file into an empty store gives identical records."
        ),
        request=ExpExportRequest,
        result=ExportResult,
        target=f"{_OPS}:export_records",
        positional=("out",),
        read_only=False,
        idempotent=True,
    ),
    Capability(
        tool="exp_ingest",
        command=("exp", "ingest"),
        summary="Record an eval result.json, ledger.jsonl line(s) or baseline.json as experiment records.",
        description=(
            "Turn `kernelpilot eval` output into records: status improved->success, regressed->regression, "
            "neutral/unstable/needs_baseline->neutral, failed->crash, correctness_failed->incorrect, "
            "out_of_scope->abandoned; score = speed-up. A task's baseline.json becomes the baseline record "
            "(success, score 1.0, tag baseline). Give --operator/--dtype/--arch/--change/--parent-id "
            "for a useful record. Ingesting the same eval twice does not duplicate it."
        ),
        request=ExpIngestRequest,
        result=IngestResult,
        target=f"{_OPS}:ingest",
        positional=("path",),
        read_only=False,
        idempotent=True,
    ),
]
