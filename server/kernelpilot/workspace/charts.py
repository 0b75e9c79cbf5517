"""Inline SVG charts for reports (no JavaScript): the roofline with iteration points, and speed-up history.

The roofline ceilings come only from cited wiki peaks (`CitedPeak`); their labels carry the citation.
Axis ticks are powers of ten of the plotted range, not hardware numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

from kernelpilot.workspace.hardware import CitedPeak

WIDTH, HEIGHT = 760, 420
PAD_L, PAD_R, PAD_T, PAD_B = 80, 20, 40, 60


@dataclass
class RooflinePoint:
    label: str
    intensity: float  # FLOP per byte
    flops_per_s: float


def _text(
    x: float,
    y: float,
    body: str,
    size: int = 10,
    anchor: str = "start",
    fill: str = "#222",
    bold: bool = False,
) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" fill="{fill}"{weight}>'
        f"{escape(body)}</text>"
    )


def _nice_step(raw: float) -> float:
    """Smallest 1/2/2.5/5 x 10^k step >= raw (axis ticks, not data)."""
    base: float = 10.0 ** math.floor(math.log10(raw))
    return float(next(m * base for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * base >= raw))


def _fmt(v: float) -> str:
    exp = math.floor(math.log10(v))
    return f"1e{exp}" if abs(exp) > 3 else f"{10.0**exp:g}"


def roofline_svg(
    compute: CitedPeak | None, bandwidth: CitedPeak | None, points: list[RooflinePoint]
) -> str | None:
    """Log-log roofline: bandwidth slope and compute roof from cited peaks, one dot per iteration."""
    if compute is None or bandwidth is None:
        return None
    ridge = compute.per_second / bandwidth.per_second
    xs = [ridge] + [p.intensity for p in points if p.intensity > 0]
    x_lo = 10 ** math.floor(math.log10(min(xs) / 10))
    x_hi = 10 ** math.ceil(math.log10(max(xs) * 10))
    ys = [compute.per_second] + [p.flops_per_s for p in points if p.flops_per_s > 0]
    y_hi = 10 ** math.ceil(math.log10(compute.per_second * 1.5))
    y_lo = 10 ** math.floor(math.log10(min(min(ys), bandwidth.per_second * x_lo) / 2))
    pw, ph = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B

    def sx(x: float) -> float:
        return PAD_L + pw * (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo))

    def sy(y: float) -> float:
        return PAD_T + ph * (1 - (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart roofline" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="roofline">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
        _text(WIDTH / 2, 20, "Roofline", size=14, anchor="middle", bold=True),
    ]
    e = math.floor(math.log10(x_lo))
    while 10**e <= x_hi:
        if 10**e >= x_lo:
            x = sx(10**e)
            out.append(f'<line x1="{x:.1f}" y1="{PAD_T}" x2="{x:.1f}" y2="{PAD_T + ph}" stroke="#eee"/>')
            out.append(_text(x, PAD_T + ph + 16, _fmt(10**e), anchor="middle"))
        e += 1
    e = math.floor(math.log10(y_lo))
    while 10**e <= y_hi:
        y = sy(10**e)
        out.append(f'<line x1="{PAD_L}" y1="{y:.1f}" x2="{PAD_L + pw}" y2="{y:.1f}" stroke="#eee"/>')
        out.append(
            f'<text x="{PAD_L - 6}" y="{y + 3:.1f}" font-size="10" text-anchor="end">{_fmt(10**e)}</text>'
        )
        e += 1
    out.append(
        f'<text x="{PAD_L + pw / 2}" y="{HEIGHT - 28}" font-size="11" text-anchor="middle">'
        "arithmetic intensity (FLOP/byte)</text>"
    )
    out.append(
        f'<text x="16" y="{PAD_T + ph / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 16 {PAD_T + ph / 2})">FLOP/s</text>'
    )
    x0 = x_lo
    y0 = bandwidth.per_second * x0
    if y0 < y_lo:
        x0 = y_lo / bandwidth.per_second
        y0 = y_lo
    out.append(
        f'<polyline fill="none" stroke="#1f77b4" stroke-width="2.5" points="{sx(x0):.1f},{sy(y0):.1f} '
        f'{sx(ridge):.1f},{sy(compute.per_second):.1f} {sx(x_hi):.1f},{sy(compute.per_second):.1f}"/>'
    )
    out.append(_text(PAD_L + 4, HEIGHT - 8, f"slope: {bandwidth.citation}", size=9, fill="#1f77b4"))
    out.append(_text(PAD_L + 4, PAD_T - 6, f"roof: {compute.citation}", size=9, fill="#1f77b4"))
    for p in points:
        if p.intensity <= 0 or p.flops_per_s <= 0:
            continue
        cx, cy = sx(p.intensity), sy(p.flops_per_s)
        out.append(
            f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="#d62728">'
            f"<title>{escape(p.label)}</title></circle>"
        )
        out.append(f'<text x="{cx + 7:.1f}" y="{cy + 3.5:.1f}" font-size="10">{escape(p.label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def speedup_svg(items: list[tuple[str, float | None]]) -> str:
    """Bar chart of speed-up over the baseline per version, with the 1.0x line."""
    vals = [v for _, v in items if v is not None]
    raw_top = max([1.0, *vals]) * 1.15
    step = _nice_step(raw_top / 5)
    steps = math.ceil(raw_top / step)
    top = step * steps
    pw, ph = WIDTH - PAD_L - PAD_R, HEIGHT - PAD_T - PAD_B
    n = max(len(items), 1)
    bw = pw / n
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart speedup" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="speed-up history">',
        f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="#fff"/>',
        f'<text x="{WIDTH / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">'
        "Speed-up over baseline</text>",
        f'<line x1="{PAD_L}" y1="{PAD_T + ph}" x2="{PAD_L + pw}" y2="{PAD_T + ph}" stroke="#333"/>',
        f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{PAD_T + ph}" stroke="#333"/>',
    ]

    def sy(v: float) -> float:
        return PAD_T + ph * (1 - v / top)

    for k in range(steps + 1):
        tick = step * k
        out.append(_text(PAD_L - 6, sy(tick) + 3, f"{tick:.2f}x", anchor="end"))
    for i, (label, v) in enumerate(items):
        x = PAD_L + i * bw + bw * 0.15
        if v is not None:
            color = "#2ca02c" if v >= 1.0 else "#d62728"
            out.append(
                f'<rect x="{x:.1f}" y="{sy(v):.1f}" width="{bw * 0.7:.1f}" height="{PAD_T + ph - sy(v):.1f}" '
                f'fill="{color}"><title>{escape(label)}: {v:.3f}x</title></rect>'
            )
            out.append(_text(x + bw * 0.35, sy(v) - 4, f"{v:.2f}x", anchor="middle"))
        out.append(
            f'<text x="{x + bw * 0.35:.1f}" y="{PAD_T + ph + 16}" font-size="10" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    y1 = sy(1.0)
    out.append(
        f'<line x1="{PAD_L}" y1="{y1:.1f}" x2="{PAD_L + pw}" y2="{y1:.1f}" '
        'stroke="#555" stroke-dasharray="4 3"/>'
    )
    out.append("</svg>")
    return "\n".join(out)
