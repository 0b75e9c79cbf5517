"""The order a sweep's cells are submitted in: longest first, from the ledger's FLOP/byte estimate.

Why: the workers pull cells from one queue, so the cells phase ends when the last cell does. Cells
submitted in ledger order put a ledger's largest shapes (usually its last lines) at the end, where one
worker still times them while the others sit idle. Submitted longest first (the longest-processing-time
rule), the cells left at the end are the short ones and the workers finish together.

A cell's estimate is its shape's roofline floor (`records.Roofline`: FLOPs and bytes at cited peaks)
times the timed launches; without a floor for every shape (no gpu in the spec, an op the roofline does
not count) the shape's size (product of its integer fields) stands in for it. A candidate timed paired
with the baseline runs both sides, so it counts twice. Only the ranking matters, never the figure.
"""

from __future__ import annotations

import math
from typing import Any

from kernelpilot.sweep.models import Shape, SweepSpec


def _size(shape: Shape) -> float:
    """Product of the shape's positive integer fields (lists: of their items): a stand-in for its work."""
    size = 1.0
    for value in shape.fields.values():
        items = value if isinstance(value, list) else [value]
        for x in items:
            if isinstance(x, int) and not isinstance(x, bool) and x > 0:
                size *= float(x)
    return size


def _paired(spec: SweepSpec, variant: str) -> bool:
    base = spec.variants[spec.baseline]
    mine = spec.variants[variant]
    return variant != spec.baseline and (mine.factory is not None) == (base.factory is not None)


def longest_first(
    todo: list[tuple[str, Shape]], spec: SweepSpec, roof: Any
) -> tuple[list[tuple[str, Shape]], str]:
    """The cells ordered longest first (ties: baseline first, then ledger order), and how they were ranked.

    `roof` is a `records.Roofline` (its `point(shape)` gives the floor, or None)."""
    floors: dict[str, float] = {}
    for _v, s in todo:
        if s.key not in floors:
            pt = roof.point(s)
            floors[s.key] = pt.floor_us if pt is not None and math.isfinite(pt.floor_us) else math.nan
    by_floor = all(math.isfinite(f) and f > 0 for f in floors.values())
    names = list(spec.variants)

    def cost(cell: tuple[str, Shape]) -> float:
        v, s = cell
        work = floors[s.key] if by_floor else _size(s)
        return work * (2.0 if _paired(spec, v) else 1.0)

    ordered = sorted(todo, key=lambda c: (-cost(c), c[0] != spec.baseline, c[1].line, names.index(c[0])))
    how = "roofline floor" if by_floor else "shape size (product of its integer fields)"
    return ordered, f"longest first by {how}, paired candidates x2"
