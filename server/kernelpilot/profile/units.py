"""Numbers and units as ncu prints them: thousands separators, auto-scaled units (us, Mbyte, Ghz), n/a cells.

`to_base(value_text, unit)` returns the value in the base unit (ns for durations, byte, Hz, per-second rates)
and that base unit's name, or None for cells that hold no number ("n/a", "(!) n/a", "-", "").
"""

from __future__ import annotations

import math
import re

# SI prefixes as ncu uses them (Kbyte = 1000 byte; checked against --print-units base on ncu 2025.3.1).
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# Standalone durations are normalized to nanoseconds.
_TIME_NS = {
    "ns": 1.0,
    "nsecond": 1.0,
    "us": 1e3,
    "usecond": 1e3,
    "ms": 1e6,
    "msecond": 1e6,
    "s": 1e9,
    "second": 1e9,
}
# Time units in a rate's denominator are normalized to "per second".
_PER_TIME_TO_PER_S = {k: 1e9 / v for k, v in _TIME_NS.items()}
_PREFIXED = re.compile(r"^(K|M|G|T|P)?(byte|hz|Hz|inst|sector|sectors|cycle|warp|thread|request|block)$")
_NA = {"", "n/a", "(!) n/a", "-", "nan", "N/A", "(!)n/a"}
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")


def parse_number(text: str) -> float | None:
    """'1,234.5' -> 1234.5; 'n/a', other non-numbers and numbers beyond a double's range -> None."""
    t = text.strip()
    if t in _NA:
        return None
    t = t.replace(",", "")
    if not _NUMBER.match(t):
        return None
    value = float(t)
    return value if math.isfinite(value) else None


def _scale_token(tok: str) -> tuple[str, float]:
    if tok in _TIME_NS:
        return "ns", _TIME_NS[tok]
    m = _PREFIXED.match(tok)
    if m:
        base = m.group(2)
        if base.lower() == "hz":
            base = "Hz"
        return base, _PREFIX[m.group(1) or ""]
    return tok, 1.0


_UNIT_CACHE: dict[str, tuple[str, float]] = {}


def unit_scale(unit: str) -> tuple[str, float]:
    """Base unit name and the factor that converts a value in `unit` to it ('Mbyte' -> ('byte', 1e6))."""
    hit = _UNIT_CACHE.get(unit)
    if hit is not None:
        return hit
    u = unit.strip()
    if "/" in u:
        num, _, den = u.partition("/")
        nbase, nf = _scale_token(num) if num else ("", 1.0)
        if den in _PER_TIME_TO_PER_S:
            # "ns/ms" has no sense: keep it as printed
            out = (u, 1.0) if nbase == "ns" else (f"{nbase}/s", nf * _PER_TIME_TO_PER_S[den])
        else:
            dbase, df = _scale_token(den)
            out = (f"{nbase}/{dbase}", nf / df)
    else:
        out = _scale_token(u)
    _UNIT_CACHE[unit] = out
    return out


def to_base(text: str, unit: str) -> tuple[float | None, str]:
    """Parse a cell and convert it to the base unit; (None, base) when the cell holds no number."""
    value = parse_number(text)
    base, factor = unit_scale(unit)
    if value is None:
        return None, base
    return value * factor, base
