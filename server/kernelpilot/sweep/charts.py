"""Inline SVG charts of the sweep dashboard (no JavaScript): kernel x shape heat map, speed-up per shape,
and roofline % per cell against arithmetic intensity. Only measured values are drawn; axis ticks are
chart geometry, not hardware numbers.
"""

from __future__ import annotations

import math
from html import escape

from kernelpilot.sweep.models import CellRow

_FONT = 'font-family="system-ui, sans-serif"'


def _color(speedup: float | None, verdict: str) -> str:
    """Green above 1x, red below, white at parity (log scale saturating at 2x / 0.5x); grey untimed."""
    if verdict == "incorrect":
        return "#6a3d9a"
    if speedup is None:
        return "#dddddd"
    t = max(-1.0, min(1.0, math.log2(speedup)))
    if t >= 0:
        r, g, b = int(255 - 211 * t), int(255 - 95 * t), int(255 - 211 * t)
    else:
        r, g, b = int(255 + 41 * t), int(255 + 216 * t), int(255 + 215 * t)
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(variants: list[str], shapes: list[tuple[str, int, str]], cells: list[CellRow]) -> str:
    """Rows = variants, columns = shapes (worst first); colour = speed-up vs baseline, text = value."""
    by = {(c.variant, c.shape_key): c for c in cells}
    cw, ch, left, top = 56, 26, 130, 30
    width = left + cw * max(len(shapes), 1) + 20
    height = top + ch * len(variants) + 40
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart heatmap" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="kernel x shape heat map" {_FONT}>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
    ]
    for j, (key, line, label) in enumerate(shapes):
        x = left + j * cw + cw / 2
        out.append(
            f'<text x="{x:.1f}" y="{top - 8}" font-size="10" text-anchor="middle">L{line}'
            f"<title>{escape(label)}</title></text>"
        )
        del key
    for i, v in enumerate(variants):
        y = top + i * ch
        out.append(
            f'<text x="{left - 8}" y="{y + ch / 2 + 4:.1f}" font-size="11" text-anchor="end">'
            f"{escape(v)}</text>"
        )
        for j, (key, line, label) in enumerate(shapes):
            c = by.get((v, key))
            x = left + j * cw
            if c is None:
                fill, text, tip = "#f4f4f4", "", f"{v} L{line}: not recorded"
            elif c.verdict == "baseline":
                fill, text = "#e8eef5", "base"
                tip = (
                    f"{v} L{line} {label}: baseline {c.median:.4g} {c.unit}" if c.median else f"{v} baseline"
                )
            else:
                fill = _color(c.speedup, c.verdict)
                text = (
                    "bad" if c.verdict == "incorrect" else ("-" if c.speedup is None else f"{c.speedup:.2f}")
                )
                tip = f"{v} L{line} {label}: {c.verdict}" + (
                    f", {c.speedup:.3f}x" if c.speedup is not None else ""
                )
            color = "#fff" if c is not None and c.verdict == "incorrect" else "#222"
            out.append(
                f'<rect x="{x}" y="{y}" width="{cw - 2}" height="{ch - 2}" fill="{fill}" stroke="#ccc">'
                f"<title>{escape(tip)}</title></rect>"
            )
            out.append(
                f'<text x="{x + cw / 2 - 1:.1f}" y="{y + ch / 2 + 3:.1f}" font-size="10" '
                f'text-anchor="middle" fill="{color}">{escape(text)}</text>'
            )
    out.append(
        f'<text x="{left}" y="{height - 12}" font-size="10" fill="#555">'
        "green: faster than the baseline, red: slower (saturates at 2x / 0.5x), purple: incorrect, "
        "grey: no speed-up</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def speedup_bars_svg(variant: str, rows: list[CellRow]) -> str:
    """One bar per shape (worst first) of a candidate's speed-up, with its CI whisker and the 1x line."""
    rows = [r for r in rows if r.speedup is not None]
    bw, left, top, ph = 34, 60, 30, 220
    width = left + bw * max(len(rows), 1) + 20
    height = top + ph + 50
    hi = max([1.2, *[(r.speedup_ci or [0, r.speedup or 0])[1] for r in rows]]) * 1.1

    def sy(v: float) -> float:
        return top + ph * (1 - min(v, hi) / hi)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart speedup" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="speed-up per shape of {escape(variant)}" '
        f"{_FONT}>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<text x="{left}" y="18" font-size="12" font-weight="bold">{escape(variant)}: speed-up per shape '
        "(worst first, 95% CI)</text>",
        f'<line x1="{left}" y1="{top + ph}" x2="{width - 10}" y2="{top + ph}" stroke="#333"/>',
    ]
    step = hi / 4
    for k in range(5):
        y = sy(step * k)
        out.append(
            f'<text x="{left - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{step * k:.2f}x</text>'
        )
    for i, r in enumerate(rows):
        sp = r.speedup or 0.0
        x = left + i * bw + 4
        color = {"win": "#2ca02c", "loss": "#d62728"}.get(r.verdict, "#7f7f7f")
        out.append(
            f'<rect x="{x}" y="{sy(sp):.1f}" width="{bw - 8}" height="{top + ph - sy(sp):.1f}" '
            f'fill="{color}">'
            f"<title>{escape(r.label)}: {sp:.3f}x ({r.verdict})</title></rect>"
        )
        if r.speedup_ci:
            cx = x + (bw - 8) / 2
            out.append(
                f'<line x1="{cx:.1f}" y1="{sy(r.speedup_ci[0]):.1f}" x2="{cx:.1f}" '
                f'y2="{sy(r.speedup_ci[1]):.1f}" stroke="#000"/>'
            )
        out.append(
            f'<text x="{x + (bw - 8) / 2:.1f}" y="{top + ph + 14}" font-size="9" text-anchor="middle">'
            f"L{r.line}</text>"
        )
    out.append(
        f'<line x1="{left}" y1="{sy(1.0):.1f}" x2="{width - 10}" y2="{sy(1.0):.1f}" stroke="#555" '
        'stroke-dasharray="4 3"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def roofline_scatter_svg(variants: list[str], cells: list[CellRow]) -> str | None:
    """Roofline % (time floor from cited peaks / measured median) against arithmetic intensity."""
    pts = [c for c in cells if c.roofline_pct is not None and c.intensity and c.intensity > 0]
    if not pts:
        return None
    palette = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf")
    width, height, left, top, pw, ph = 760, 360, 70, 30, 640, 270
    xs = [c.intensity or 1.0 for c in pts]
    x_lo = 10 ** math.floor(math.log10(min(xs)))
    x_hi = 10 ** math.ceil(math.log10(max(xs) * 1.0001))
    if x_hi <= x_lo:
        x_hi = x_lo * 10
    y_hi = max(100.0, max(c.roofline_pct or 0 for c in pts) * 1.1)

    def sx(v: float) -> float:
        return left + pw * (math.log10(v) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def sy(v: float) -> float:
        return top + ph * (1 - v / y_hi)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart roofpct" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="roofline percent per cell" {_FONT}>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#fff"/>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="#333"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="#333"/>',
        f'<text x="{left + pw / 2}" y="{height - 8}" font-size="11" text-anchor="middle">'
        "arithmetic intensity (FLOP/byte, log)</text>",
        f'<text x="14" y="{top + ph / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2})">% of roofline</text>',
    ]
    for k in range(0, 5):
        v = y_hi * k / 4
        out.append(
            f'<text x="{left - 6}" y="{sy(v) + 3:.1f}" font-size="10" text-anchor="end">{v:.0f}%</text>'
        )
    e = math.floor(math.log10(x_lo))
    while 10**e <= x_hi:
        out.append(
            f'<text x="{sx(10**e):.1f}" y="{top + ph + 14}" font-size="10" text-anchor="middle">'
            f"{10.0**e:g}</text>"
        )
        e += 1
    out.append(
        f'<line x1="{left}" y1="{sy(100):.1f}" x2="{left + pw}" y2="{sy(100):.1f}" stroke="#999" '
        'stroke-dasharray="4 3"/>'
    )
    for c in pts:
        color = palette[variants.index(c.variant) % len(palette)] if c.variant in variants else "#000"
        out.append(
            f'<circle cx="{sx(c.intensity or 1.0):.1f}" cy="{sy(c.roofline_pct or 0):.1f}" r="4" '
            f'fill="{color}">'
            f"<title>{escape(c.variant)} L{c.line} {escape(c.label)}: {c.roofline_pct:.1f}%</title></circle>"
        )
    for i, name in enumerate(variants):
        out.append(
            f'<circle cx="{left + 10 + i * 110}" cy="{top - 12}" r="4" fill="{palette[i % len(palette)]}"/>'
            f'<text x="{left + 18 + i * 110}" y="{top - 8}" font-size="10">{escape(name)}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)
