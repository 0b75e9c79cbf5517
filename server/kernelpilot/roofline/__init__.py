"""Roofline analysis from cited (wiki) or measured peaks: FLOP/byte counting, bound, floor, targets, charts.

Public API (what `kernelpilot.workspace` and the capabilities import):
`analyze(RooflineRequest) -> RooflineResult`. The math module is imported on first use,
so importing the request/result models (capability listing) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelpilot.roofline.models import RooflineRequest, RooflineResult

if TYPE_CHECKING:
    from kernelpilot.roofline.core import analyze, choose_peak_metric, roof_from_peaks

__all__ = ["RooflineRequest", "RooflineResult", "analyze", "choose_peak_metric", "roof_from_peaks"]


def __getattr__(name: str) -> Any:
    if name in ("analyze", "choose_peak_metric", "roof_from_peaks"):
        from kernelpilot.roofline import core

        return getattr(core, name)
    raise AttributeError(f"module 'kernelpilot.roofline' has no attribute {name!r}")
