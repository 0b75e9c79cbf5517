"""The root-cause rule registry: every rule family's declared rules, evaluated on one kernel, firing rules
ordered by estimated gain (measured gains first), non-firing ones kept as `ruled_out` evidence."""

from __future__ import annotations

from kernelpilot.bottleneck.models import Cause
from kernelpilot.bottleneck.rules import compute, issue, memory, parallelism
from kernelpilot.bottleneck.rules.base import Clear, Ctx, Finding, Rule, to_cause

RULES: tuple[Rule, ...] = (*memory.RULES, *parallelism.RULES, *compute.RULES, *issue.RULES)

# Levers a rule's clear result contradicts: they never appear when the rule was evaluated and did not fire.
CONTRADICTS: dict[str, tuple[str, ...]] = {
    "shared_bank_conflicts": ("fix_bank_conflicts",),
    "uncoalesced_global_access": ("coalesce_access",),
    "local_memory": ("remove_spills", "registerize_local_array"),
}


MIN_GAIN_PCT = 5.0  # kernelpilot: an estimated gain below this is within run-to-run noise


def _key(c: Cause) -> tuple[int, float]:
    """Measured gains >= MIN_GAIN_PCT first (largest first), then unmeasured causes, then small gains."""
    if c.gain_pct is None:
        return (1, 0.0)
    return (0 if c.gain_pct >= MIN_GAIN_PCT else 2, -c.gain_pct)


def evaluate(ctx: Ctx) -> tuple[list[Cause], list[str]]:
    """(firing causes, largest gain first; 'rule: why' for rules evaluated that did not fire)."""
    causes: list[Cause] = []
    clear: list[str] = []
    for rule in RULES:
        out = rule.check(ctx)
        if isinstance(out, Finding):
            causes.append(to_cause(rule, out, ctx))
        elif isinstance(out, Clear):
            clear.append(f"{rule.name}: {out.reason}")
    causes.sort(key=_key)
    return causes, clear


def contradicted_levers(ruled_out: list[str]) -> set[str]:
    names = {r.split(":", 1)[0] for r in ruled_out}
    return {lv for n in names for lv in CONTRADICTS.get(n, ())}


__all__ = ["CONTRADICTS", "MIN_GAIN_PCT", "RULES", "Ctx", "contradicted_levers", "evaluate"]
