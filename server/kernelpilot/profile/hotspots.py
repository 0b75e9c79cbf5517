"""Hotspots: rank SASS lines of ncu's source page by sampled warp stalls and map them to source file:line."""

from __future__ import annotations

from collections import defaultdict

from kernelpilot.profile.models import Hotspot, KernelHotspots
from kernelpilot.profile.ncu_csv import SourceKernel, SourceLineRow


def _top_reasons(reasons: dict[str, float], n: int = 3) -> list[str]:
    items = sorted(((r, v) for r, v in reasons.items() if v > 0), key=lambda kv: -kv[1])[:n]
    return [f"{r}: {v:.0f}" for r, v in items]


def _loc(row: SourceLineRow) -> str | None:
    if row.file is None or row.line is None:
        return None
    return f"{row.file}:{row.line}"


def kernel_hotspots(k: SourceKernel, top: int = 10) -> KernelHotspots:
    # An address listed under several source lines (inlining) is counted once, at its first mapping.
    seen: set[str] = set()
    rows: list[SourceLineRow] = []
    for r in k.rows:
        if r.address in seen:
            continue
        seen.add(r.address)
        rows.append(r)
    total = sum(r.samples for r in rows)
    reasons: dict[str, float] = defaultdict(float)
    for r in rows:
        for name, v in r.reasons.items():
            if not name.endswith("(Not Issued)"):
                reasons[name] += v
    ranked = sorted((r for r in rows if r.samples > 0), key=lambda r: -r.samples)[:top]
    sass = [
        Hotspot(
            rank=i + 1,
            share_pct=100.0 * r.samples / total if total else 0.0,
            stall_samples=r.samples,
            top_reasons=_top_reasons(r.reasons),
            address=r.address,
            instruction=r.instruction,
            location=_loc(r),
            source_text=r.source_text,
        )
        for i, r in enumerate(ranked)
    ]
    by_line: dict[str, list[SourceLineRow]] = defaultdict(list)
    # Prefer ncu's own per-source-line rows (cuda,sass view); else sum the mapped SASS rows.
    for r in k.line_rows or rows:
        loc = _loc(r)
        if loc is not None:
            by_line[loc].append(r)
    line_rank = sorted(by_line.items(), key=lambda kv: -sum(r.samples for r in kv[1]))[:top]
    lines: list[Hotspot] = []
    for i, (loc, rs) in enumerate(line_rank):
        samples = sum(r.samples for r in rs)
        if samples <= 0:
            break
        agg: dict[str, float] = defaultdict(float)
        for r in rs:
            for name, v in r.reasons.items():
                agg[name] += v
        lines.append(
            Hotspot(
                rank=i + 1,
                share_pct=100.0 * samples / total if total else 0.0,
                stall_samples=samples,
                top_reasons=_top_reasons(agg),
                location=loc,
                source_text=rs[0].source_text,
            )
        )
    return KernelHotspots(
        kernel=k.kernel, total_samples=total, sass=sass, source_lines=lines, stall_reasons=dict(reasons)
    )
