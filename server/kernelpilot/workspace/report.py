"""Plans and reports of a workspace, rendered from `templates/` (Markdown, plus self-contained HTML).

Reads the workspace's task context, its unmasked memory records and cited hardware facts; writes
`plans/v<N>-<slug>.md` and `reports/<kind>[-v<N>].{md,html}` atomically, audits them, commits.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.workspace import charts, gitops, ratios
from kernelpilot.workspace.core import Workspace, audit_files, hardware_for, locate, now_iso
from kernelpilot.workspace.errors import MemoryVersionError
from kernelpilot.workspace.hardware import HardwareInfo
from kernelpilot.workspace.memory import _UNIT_TO_US, load_all, summarize
from kernelpilot.workspace.models import (
    RenderReportRequest,
    RenderReportResult,
    WritePlanRequest,
    WritePlanResult,
)
from kernelpilot.workspace.render import render_template
from kernelpilot.workspace.schema import memory_schema, with_defaults


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:48] or "plan"


def write_plan(req: WritePlanRequest) -> WritePlanResult:
    ws = locate(req.workspace, req.root)
    records = load_all(ws)
    version = (
        req.for_version
        if req.for_version is not None
        else (max(int(r["version"]) for r in records) + 1 if records else 0)
    )
    hw = hardware_for(ws.config)
    text = render_template(
        "plan.md.j2",
        ws=ws.config,
        hw=hw,
        version=version,
        title=req.title,
        hypothesis=req.hypothesis,
        steps=req.steps,
        expected_speedup=req.expected_speedup,
        risks=req.risks,
        stop_when=req.stop_when,
        created=now_iso(),
        latest=summarize(ws, records, False),
    )
    path = ws.path / "plans" / f"v{version}-{_slug(req.title)}.md"
    write_text_atomic(path, text, mkdir=True)  # plans/ is the workspace's own layout
    audit = _audit_or_remove([path], ws, hw)
    rel = path.relative_to(ws.path).as_posix()
    head = gitops.commit_all(ws.path, f"plan v{version}: {req.title}", [rel]) if req.commit else None
    return WritePlanResult(workspace=str(ws.path), path=rel, version=version, commit=head, audit=audit)


def _audit_or_remove(paths: list[Path], ws: Workspace, hw: HardwareInfo) -> str:
    """Audit freshly written files; on failure remove them so no unaudited file stays behind."""
    try:
        return audit_files(paths, ws.wiki_dirs(), hw)
    except BaseException:
        for p in paths:
            p.unlink(missing_ok=True)
        gitops.git(
            ws.path,
            "checkout",
            "-q",
            "HEAD",
            "--",
            *[p.relative_to(ws.path).as_posix() for p in paths],
            check=False,
        )
        raise


def _history(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Unmasked records (kept and reverted: a reverted iteration stays in the history with its status) with
    derived speed-up over their parent and claim-vs-measured."""
    schema = memory_schema()
    by_v = {int(r["version"]): r for r in records}
    rows = []
    for raw in records:
        if raw["masked"]:
            continue
        r = with_defaults(raw, schema)
        perf = r["performance"]
        med = perf["median"] * _UNIT_TO_US[perf["unit"]] if perf["median"] is not None else None
        vs_parent, basis = _stored_vs_parent(
            r, by_v.get(r["parent"]) if r["parent"] is not None else None, med
        )
        claim = perf.get("expected_speedup")
        rows.append(
            {
                "r": r,
                "version": int(r["version"]),
                "status": "reverted"
                if r.get("reverted")
                else ("exploration" if ratios.kind_of(r) == "exploration" else "kept"),
                "vs_parent_basis": basis,
                "vs_baseline_basis": perf.get("vs_baseline_basis"),
                "reverted": r.get("reverted"),
                "median_us": med,
                "vs_parent": vs_parent,
                "claim": claim,
                "claim_ratio": (vs_parent / claim) if (vs_parent and claim) else None,
                "claim_verdict": None
                if not (vs_parent and claim)
                else ("met" if vs_parent >= claim * 0.95 else "missed"),
            }
        )
    return rows


def _stored_vs_parent(
    r: dict[str, Any], parent: dict[str, Any] | None, med: float | None
) -> tuple[float | None, str | None]:
    """The ratio memory create stored, with its basis (`workspace.ratios`); a record written before ratio
    bases keeps its medians' ratio, labelled as such. The report never divides medians of its own."""
    perf = r["performance"]
    if perf.get("vs_parent_basis") is not None or parent is None:
        return perf.get("vs_parent"), perf.get("vs_parent_basis")
    pmed = ratios.median_us(parent)
    if pmed is None or not med:
        return None, None
    return pmed / med, "unpaired: medians divided (recorded before memory kept ratio bases)"


def _stop_reason(req: RenderReportRequest, hw: Any) -> str:
    if req.stop_reason:
        return req.stop_reason
    if getattr(hw, "stop_status", None) == "MET":
        return "the stop target was met (the stop verdict above)"
    return ""


def _points(ws: Workspace, rows: list[dict[str, Any]]) -> list[charts.RooflinePoint]:
    flops, nbytes = ws.config.get("flops"), ws.config.get("bytes_moved")
    if not flops or not nbytes:
        return []
    out = []
    for row in rows:
        if row["median_us"]:
            label = f"v{row['version']}" + (" (reverted)" if row["reverted"] else "")
            out.append(charts.RooflinePoint(label, flops / nbytes, flops / (row["median_us"] * 1e-6)))
    return out


def render_report(req: RenderReportRequest) -> RenderReportResult:
    ws = locate(req.workspace, req.root)
    records = load_all(ws)
    summary = summarize(ws, records, False)
    rows = _history(records)
    if not rows:
        raise MemoryVersionError(
            f"workspace {ws.name} has no unmasked memory versions to report on",
            "record the baseline first: `kernelpilot memory create --change baseline ...`",
        )
    by_v = {row["version"]: row for row in rows}
    kept = [row for row in rows if not row["reverted"]] or rows
    if req.kind == "final":
        focus = by_v[summary.best_version] if summary.best_version is not None else kept[-1]
        stem = "final"
    elif req.kind == "baseline":
        focus = (
            by_v.get(summary.baseline_version, kept[0]) if summary.baseline_version is not None else kept[0]
        )
        stem = "baseline"
    else:
        v = req.version if req.version is not None else summary.latest_version
        if v not in by_v:
            raise MemoryVersionError(
                f"v{v} is not an unmasked memory version of {ws.name}",
                "pick one listed by `kernelpilot memory summary`",
            )
        focus = by_v[v]
        stem = f"iteration-v{v}"
    hw = hardware_for(ws.config, measured_time_us=focus["median_us"])
    shown_rows = rows if req.kind == "final" else [focus]
    hotspots_src = next(
        (row for row in ([focus, *reversed(rows)]) if row["r"]["profile"].get("hotspots")), None
    )
    roofline_svg = charts.roofline_svg(hw.peak_compute, hw.peak_bandwidth, _points(ws, shown_rows))
    speedup_svg = charts.speedup_svg(
        [(f"v{row['version']}", row["r"]["performance"]["vs_baseline"]) for row in rows]
    )
    ctx: dict[str, Any] = {
        "ws": ws.config,
        "hw": hw,
        "kind": req.kind,
        "rows": rows,
        "focus": focus,
        "baseline": by_v.get(summary.baseline_version, kept[0])
        if summary.baseline_version is not None
        else kept[0],
        "stop_reason": _stop_reason(req, hw),
        "summary": summary,
        "hotspots_src": hotspots_src,
        "roofline_svg": roofline_svg,
        "speedup_svg": speedup_svg,
        "generated": now_iso(),
        "masked_versions": summary.masked_versions,
        "reverted_rows": [row for row in rows if row["reverted"]],
        "best": by_v.get(summary.best_version) if summary.best_version is not None else None,
        "att": None,
    }
    if req.att_dir:
        from kernelpilot.profile.att.analysis import profile_att
        from kernelpilot.profile.att.models import AttRequest

        ctx["att"] = profile_att(AttRequest(path=req.att_dir, top=8, context=0))
    md_template = {"final": "final_report.md.j2", "baseline": "baseline_report.md.j2"}.get(
        req.kind, "iteration_report.md.j2"
    )
    md_path = ws.path / "reports" / f"{stem}.md"
    write_text_atomic(md_path, render_template(md_template, **ctx), mkdir=True)  # the workspace's reports/
    written = [md_path]
    html_path = None
    if req.html:
        html_path = ws.path / "reports" / f"{stem}.html"
        write_text_atomic(html_path, render_template("report.html.j2", **ctx), mkdir=True)
        written.append(html_path)
    audit = _audit_or_remove(written, ws, hw)
    rels = [p.relative_to(ws.path).as_posix() for p in written]
    head = gitops.commit_all(ws.path, f"report: {stem}", rels) if req.commit else None
    return RenderReportResult(
        workspace=str(ws.path),
        markdown=rels[0],
        html=rels[1] if html_path else None,
        versions=[row["version"] for row in rows],
        audit=audit,
        commit=head,
    )
