"""Views of a workload result: a text view sized for an agent's context, and the HTML report section.

The text view keeps the table to the kernels that hold the time (the hot set and at most `TEXT_ROWS`),
the groups to their top entries and the opportunities to the top `TEXT_OPPS`, each with its formula; the
JSON model keeps everything. The HTML page (templates/workload_report.html.j2) draws the breakdown bars,
the cumulative-share curve and the opportunity table as inline SVG and tables, without scripts.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # models.py imports this module to render itself; only the types are needed here
    from kernelpilot.workload.models import WorkloadDiffResult, WorkloadKernel, WorkloadResult

TEXT_ROWS = 20
TEXT_OPPS = 6
GROUP_ROWS = 5


def _f(v: float | None, fmt: str = ".1f") -> str:
    return "-" if v is None else format(v, fmt)


def _drill(k: WorkloadKernel) -> str:
    d = k.drill or {}
    if not d:
        return ""
    if not d.get("ok"):
        return "drill failed"
    share = d.get("roofline_share")
    return f"{d.get('bound', '?')}" + (
        f" {float(share):.0%} of roof" if isinstance(share, (int, float)) else ""
    )


def _isa(k: WorkloadKernel) -> str:
    i = k.isa or {}
    if not i:
        return ""
    if not i.get("facts"):
        return "unmatched"
    occ = str(i.get("occupancy") or "-").split(" (")[0]
    src = ""
    if i.get("facts") != "code object":
        src = " (trace)"
    elif i.get("origin") == "cupti module":  # a cubin loaded at run time (workload/loaded_cubins.py)
        src = " (cupti)"
    dyn = f"+{i['dynamic_shared_bytes']}" if i.get("dynamic_shared_bytes") else ""
    return f"r{i.get('registers')} smem {i.get('shared_bytes')}{dyn} occ {occ}{src}"


def _step_lines(r: WorkloadResult) -> list[str]:
    s = r.step
    lines = [f"step ({s.steps} captured): kernels {s.kernel_us:.1f} µs, {s.launches:g} launches"]
    if s.wall_us is not None:
        lines.append(
            f"  wall {s.wall_us:.1f} µs · busy {_f(s.busy_us)} µs · idle {_f(s.idle_us)} µs"
            f" (launch-bound {_f(s.launch_bound_gap_us)} µs) · host waits {_f(s.host_wait_us)} µs"
            f" · launch call {_f(s.launch_call_us, '.2f')} µs"
        )
    if s.event_step_us is not None:
        lines.append(f"  CUDA events without the tracer: {s.event_step_us:.1f} µs/step")
    return lines


def render_result(r: WorkloadResult) -> str:
    out = [
        f"workload {r.source} [{r.format}] on {r.gpu or 'unknown GPU'}",
        f"method: {r.method}",
        *_step_lines(r),
    ]
    out += [f"note: {n}" for n in r.notes]
    rows = [k for k in r.kernels if k.hot] or r.kernels[:TEXT_ROWS]
    rows = rows + [k for k in r.kernels[:TEXT_ROWS] if k not in rows][: max(0, TEXT_ROWS - len(rows))]
    out.append("")
    out.append(
        f"{'#':>2} {'µs/step':>8} {'share':>6} {'cum':>5} {'n/step':>6} {'med µs':>7}  {'category':<13} "
        f"{'kernel':<48} {'drill':<22} isa"
    )
    for i, k in enumerate(rows, 1):
        out.append(
            f"{i:>2} {k.us_per_step:8.1f} {k.share:6.1%} {k.cumulative_share:5.0%} {k.launches_per_step:6g} "
            f"{k.launch.median_us:7.2f}  {k.category:<13} {('*' if k.hot else ' ') + k.short_name[:47]:<48} "
            f"{_drill(k):<22} {_isa(k)}"
        )
    if len(r.kernels) > len(rows):
        rest = r.kernels[len(rows) :]
        out.append(
            f"   ... {len(rest)} more kernels, {sum(k.us_per_step for k in rest):.1f} µs/step (JSON has all)"
        )
    out.append("* = hot set")
    for level in ("category", "op", "module", "range", "phase"):
        g = [x for x in r.groups if x.level == level][:GROUP_ROWS]
        if g:
            out.append(
                f"by {level}: " + "; ".join(f"{x.key} {x.us_per_step:.1f} µs ({x.share:.0%})" for x in g)
            )
    if r.isa_joined_share is not None or r.drilled_share is not None:
        hot = [k for k in r.kernels if k.hot]
        hot_us = sum(k.us_per_step for k in hot) or 1.0
        from_file = r.isa_code_object_share
        if from_file is None:  # a result written before the field existed
            from_file = (
                sum(k.us_per_step for k in hot if (k.isa or {}).get("facts") == "code object") / hot_us
            )
        out.append(
            f"hot set: ISA facts for {_f((r.isa_joined_share or 0) * 100, '.0f')}% of its GPU time "
            f"({from_file:.0%} from the code objects loaded, the rest from the trace's launch records), "
            f"roofline position for {_f((r.drilled_share or 0) * 100, '.0f')}%"
        )
    if r.unmatched:
        out.append("ISA join unmatched: " + "; ".join(r.unmatched))
    if r.drill_failures:
        out.append("drill-down failed: " + "; ".join(r.drill_failures))
    out.append("")
    out.append("opportunities (µs per step, largest first):")
    if not r.opportunities:
        out.append("  none found above the noise floor")
    for i, o in enumerate(r.opportunities[:TEXT_OPPS], 1):
        out.append(
            f"{i}. [{o.kind}] {o.title}"
            + (f" ({o.share_of_step:.1%} of the step)" if o.share_of_step else "")
        )
        out.append(f"   formula: {o.formula}")
        out += [f"   evidence: {e}" for e in o.evidence]
        out.append(f"   next: {o.next_command}")
    if r.wall_s is not None:
        out.append(f"run wall time {r.wall_s:.1f} s")
    return "\n".join(out)


def render_diff(d: WorkloadDiffResult) -> str:
    out = [f"workload diff {d.a} -> {d.b}", f"method: {d.method}", f"verdict: {d.verdict}", ""]
    out.append(
        f"{'level':<8} {'A µs':>8} {'B µs':>8} {'Δ µs':>8} {'Δ %':>7} {'CI µs':>17}  {'verdict':<9} name"
    )
    for r in d.rows[:40]:
        ci = (
            f"[{r.ci_low_us:+.2f}, {r.ci_high_us:+.2f}]"
            if r.ci_low_us is not None and r.ci_high_us is not None
            else "-"
        )
        out.append(
            f"{r.level:<8} {_f(r.a_us_per_step):>8} {_f(r.b_us_per_step):>8} {r.delta_us:+8.2f} "
            f"{_f(r.delta_pct, '+.1f'):>7} {ci:>17}  {r.verdict:<9} {r.short_name[:60]}"
        )
    if len(d.rows) > 40:
        out.append(f"... {len(d.rows) - 40} more rows in the JSON")
    return "\n".join(out)


def _bars_svg(r: WorkloadResult, rows: int = 20) -> str:
    ks = r.kernels[:rows]
    top = max((k.us_per_step for k in ks), default=1.0) or 1.0
    colours = {
        "gemm": "#1f77b4",
        "attention": "#9467bd",
        "normalization": "#ff7f0e",
        "elementwise": "#2ca02c",
        "reduction": "#8c564b",
        "copy_memset": "#7f7f7f",
        "communication": "#e377c2",
        "other": "#bcbd22",
    }
    h, w, label = 18, 420, 360
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{label + w + 90}" '
        f'height="{h * len(ks) + 10}" role="img" aria-label="µs per step by kernel">'
    ]
    for i, k in enumerate(ks):
        y = 5 + i * h
        bw = max(1.0, w * k.us_per_step / top)
        parts.append(
            f'<text x="{label - 6}" y="{y + 13}" text-anchor="end" font-size="11">'
            f"{escape(k.short_name[:55])}</text>"
        )
        parts.append(
            f'<rect x="{label}" y="{y + 2}" width="{bw:.1f}" height="{h - 5}" fill="{colours[k.category]}">'
            f"<title>{escape(k.category)}: {k.us_per_step:.1f} µs/step</title></rect>"
        )
        parts.append(
            f'<text x="{label + bw + 4:.1f}" y="{y + 13}" font-size="11">{k.us_per_step:.1f} µs</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _cumulative_svg(r: WorkloadResult) -> str:
    w, h, pad = 520, 220, 36
    n = max(len(r.kernels), 1)
    pts = [(pad, h - pad)] + [
        (pad + (w - 2 * pad) * (i + 1) / n, h - pad - (h - 2 * pad) * k.cumulative_share)
        for i, k in enumerate(r.kernels)
    ]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
    y80 = h - pad - (h - 2 * pad) * r.hot_share
    return (
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" '
        f'aria-label="cumulative share of kernel time">'
        f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="#444"/>'
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="#444"/>'
        f'<line x1="{pad}" y1="{y80:.1f}" x2="{w - pad}" y2="{y80:.1f}" stroke="#d62728" '
        f'stroke-dasharray="4 3"/>'
        f'<text x="{w - pad}" y="{y80 - 4:.1f}" text-anchor="end" font-size="11">'
        f"hot set {r.hot_share:.0%}</text>"
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="{path}"/>'
        f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle" font-size="11">'
        f"kernels, most time first ({n})</text>"
        f'<text x="10" y="{pad - 10}" font-size="11">cumulative share</text></svg>'
    )


def render_html(r: WorkloadResult) -> str:
    from kernelpilot.workspace.render import render_template

    return render_template(
        "workload_report.html.j2",
        r=r,
        step_lines=_step_lines(r),
        bars_svg=_bars_svg(r),
        cumulative_svg=_cumulative_svg(r),
        drill=_drill,
        isa=_isa,
    )
