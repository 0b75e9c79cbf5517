"""Core functions behind the `spec`, `gpus` and `audit` capabilities (no CLI/MCP code here)."""

from __future__ import annotations

from pathlib import Path

from kernelpilot.foundation.errors import UnknownSpecError
from kernelpilot.wiki.audit import audit_paths
from kernelpilot.wiki.core import Wiki, load_wiki
from kernelpilot.wiki.errors import AmbiguousNameError
from kernelpilot.wiki.models import (
    AuditRequest,
    AuditResult,
    GpusRequest,
    GpusResult,
    SpecRequest,
    SpecResult,
)

_REPORTED_ISSUES = ("malformed", "conflict", "duplicate", "index", "unindexed")


def wiki_from_dirs(dirs: list[str]) -> Wiki:
    return load_wiki([Path(d) for d in dirs])


def _issues(wiki: Wiki, gpu_id: str | None = None) -> list[str]:
    out = []
    for i in wiki.issues:
        if i.kind not in _REPORTED_ISSUES:
            continue
        if gpu_id is not None and gpu_id not in i.message and not i.path.endswith(f"/{gpu_id}.md"):
            continue
        out.append(i.render())
    return out


def _gpu_words(wiki: Wiki, req: SpecRequest) -> SpecRequest:
    """`kernelpilot spec H100 SXM` (unquoted) splits the GPU name over both positionals: when the name and
    the "metric" together name a GPU, they are the GPU and every spec is listed."""
    if req.metric is None:
        return req
    joined = f"{req.gpu} {req.metric}"
    try:
        wiki.resolve_gpu(joined)
    except (UnknownSpecError, AmbiguousNameError):
        return req  # not a GPU name: the second word is the metric
    return req.model_copy(update={"gpu": joined, "metric": None})


def spec_lookup(req: SpecRequest) -> SpecResult:
    wiki = wiki_from_dirs(req.wiki)
    req = _gpu_words(wiki, req)
    try:
        gpu_id = wiki.resolve_gpu(req.gpu)
        note = wiki.name_note(req.gpu, gpu_id)
        notes = [note] if note else []
        if req.metric is None:
            values = wiki.specs(gpu_id)
            return SpecResult(
                status="found",
                gpu=req.gpu,
                gpu_id=gpu_id,
                values=values,
                citations=[v.citation() for v in values],
                overrides=wiki.override_notes(gpu_id),
                issues=_issues(wiki, gpu_id),
                notes=notes,
            )
        cv = wiki.lookup(gpu_id, req.metric)
    except AmbiguousNameError as exc:
        failed = SpecResult(
            status="ambiguous",
            gpu=req.gpu,
            metric=req.metric,
            candidates=exc.candidates,
            unknown=exc.message,
            issues=_issues(wiki),
        )
        failed._hint = exc.hint
        return failed
    except UnknownSpecError as exc:
        failed = SpecResult(
            status="unknown", gpu=req.gpu, metric=req.metric, unknown=exc.message, issues=_issues(wiki)
        )
        failed._hint = exc.hint
        return failed
    overrides = [n for n in wiki.override_notes(gpu_id) if n.startswith(cv.metric + ":")]
    return SpecResult(
        status="found",
        gpu=req.gpu,
        gpu_id=gpu_id,
        metric=cv.metric,
        values=[cv],
        citations=[cv.citation()],
        overrides=overrides,
        issues=_issues(wiki, gpu_id),
        notes=notes,
    )


def list_gpus(req: GpusRequest) -> GpusResult:
    wiki = wiki_from_dirs(req.wiki)
    infos = wiki.gpu_infos()
    reasons: dict[str, int] = {}  # issue-floor reason -> its 1-based number, each said once
    if req.missing:
        from kernelpilot.wiki.coverage import critical_metrics, missing_critical, missing_issue_floor

        for info in infos:
            entry = wiki.gpus[info.gpu_id]
            info.critical_metrics = critical_metrics(entry)
            info.missing_metrics = missing_critical(entry)
            info.issue_floor_missing, why = missing_issue_floor(wiki, entry)
            info.issue_floor_why = [reasons.setdefault(w, len(reasons) + 1) for w in why]
    return GpusResult(
        gpus=infos,
        issue_floor_reasons=list(reasons),
        missing=req.missing,
        roots=[f"{r.name} ({'bundled' if r.bundled else r.path})" for r in wiki.roots],
        issues=[i.render() for i in wiki.issues if i.kind != "duplicate"],
    )


def audit_citations(req: AuditRequest) -> AuditResult:
    wiki = wiki_from_dirs(req.wiki)
    return audit_paths([Path(p) for p in req.paths], wiki, history=req.history)
