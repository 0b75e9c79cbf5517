"""A `classify_bottleneck` verdict from a decoded ATT folder: reads and analyses it (`analysis`), then
weighs the stall split and the findings of `diagnose`. Sits above both so `diagnose` stays a pure function of
an analysis result."""

from __future__ import annotations

from kernelpilot.bottleneck.models import BottleneckVerdict, Evidence, Verdict
from kernelpilot.profile.att.analysis import profile_att
from kernelpilot.profile.att.diagnose import STALL_BOUND_PCT
from kernelpilot.profile.att.models import AttRequest


def att_verdict(path: str) -> BottleneckVerdict:
    """A `classify_bottleneck` verdict from an ATT folder: stall-bound kernels are latency_bound (sync_bound
    when barriers lead), with the taxonomy shares and the findings as evidence."""
    res = profile_att(AttRequest(path=path))
    src = f"{res.path}/code.json (ATT, {res.totals.waves_sampled} sampled waves)"
    ev = [
        Evidence(
            metric="att.stall_ratio_pct",
            value=round(res.totals.stall_ratio_pct, 1),
            threshold=f">= {STALL_BOUND_PCT:g} (%): stall-bound",
            source=src,
        )
    ]
    ev += [
        Evidence(
            metric=f"att.stall.{b.bucket}_pct",
            value=round(b.share_pct, 1),
            threshold="share of stall",
            source=src,
        )
        for b in res.stall_taxonomy[:4]
    ]
    top = res.stall_taxonomy[0].bucket if res.stall_taxonomy else "other"
    stall_bound = res.totals.stall_ratio_pct >= STALL_BOUND_PCT
    verdict: Verdict = (
        "unknown" if not stall_bound else ("sync_bound" if top == "barrier" else "latency_bound")
    )
    rules = [f for f in res.findings if f.rule != "att_stall_bound"]
    return BottleneckVerdict(
        kernel=res.kernel or res.dispatch,
        verdict=verdict,
        confidence=0.7 if stall_bound else 0.3,
        evidence=ev,
        next_measurements=[lv for f in rules for lv in f.levers[:1]],
        summary="; ".join(f"{f.verdict}: {f.measured}" for f in rules) or "no ATT rule fired",
    )
