"""Roofline analysis from cited (wiki) or measured peaks: FLOP/byte counting, bound, floor, targets, charts.

Public API (contract 2): `analyze(RooflineRequest) -> RooflineResult`.
"""

from kernelpilot.roofline.core import analyze, choose_peak_metric, roof_from_peaks
from kernelpilot.roofline.models import RooflineRequest, RooflineResult

__all__ = ["RooflineRequest", "RooflineResult", "analyze", "choose_peak_metric", "roof_from_peaks"]
