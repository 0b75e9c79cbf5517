"""The HTML report of a workload result (the text views live with the models they render: models.py).

The HTML page (templates/workload_report.html.j2) draws the breakdown bars, the cumulative-share curve,
the idle causes and the opportunity table as inline SVG and tables, without scripts.
"""

from __future__ import annotations

from html import escape

from kernelpilot.workload.models import (
    CAUSE_WORDS,
    WorkloadResult,
    drill_cell,
    isa_cell,
    shape_cell,
    step_lines,
)


def _bars_svg(r: WorkloadResult, rows: int = 20) -> str:
    ks = r.kernels[:rows]
    top = max((k.us_per_step for k in ks), default=1.0) or 1.0
    colours = {
        "gemm": "#1f77b4",
        "attention": "#9467bd",
        "loss": "#17becf",
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
        step_lines=step_lines(r),
        bars_svg=_bars_svg(r),
        cumulative_svg=_cumulative_svg(r),
        drill=drill_cell,
        cause_words=CAUSE_WORDS,
        isa=isa_cell,
        shapes=shape_cell,
    )
