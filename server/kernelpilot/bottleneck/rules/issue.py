"""Issue- and latency-side root causes: kernels bound by how many instructions they issue and how those
instructions depend on each other, not by FLOPs or bytes (top-k gating, row reductions, softmax-like row ops,
fused RoPE). They read per-pipe utilization (`kernelpilot.bottleneck.pipes`), the issue-slot use, the
active-thread ratio, the stall mix (ncu Warp State Statistics) and, when given, the ISA's SHFL count.

- `issue_bound`: issue slots busy with no pipe saturated: the instruction count is the limit.
- `shuffle_chain`: serialized cross-lane reductions: SHFL a large share of the code, or MIO-dependency
  (short_scoreboard) stalls with no shared-memory traffic and a quiet XU pipe (shuffles are what is awaited).
- `dependent_issue`: warps wait on the previous instruction's result (wait, short_scoreboard): low ILP.
- `idle_lanes`: few active, predicated-on threads per warp instruction (masked tree steps, divergence).
- `replicated_work`: thread instructions per element far above the algorithm's (a value held by many lanes
  and computed by each), from `elements` / `algorithm_inst_per_element` ISA facts.
Thresholds are kernelpilot heuristics unless a line cites ncu.
"""

from __future__ import annotations

import re

from kernelpilot.bottleneck.pipes import (
    ISSUE_ACTIVE,
    busiest,
    issue_active_pct,
    pipe_utilization,
    warp_instructions,
)
from kernelpilot.bottleneck.rules.base import NCU_GUIDE, PG, Clear, Ctx, Finding, Rule

ISSUE_BOUND_PCT = 60.0  # as the ncu SOL rule's 60%: issue slots this busy bound the kernel
PIPE_BUSY_PCT = 60.0  # as rules.compute: a pipe this busy is pipe_saturation's cause, not issue_bound's
REMOVABLE_SHARE = 0.25  # as rules.compute: a fix removes a quarter of the instructions (assumed)
SHUFFLE_SHARE = 0.10  # kernelpilot: SHFL >= 10% of the code = reductions are a main cost
MIO_STALL_SHARE = 0.20  # kernelpilot: short_scoreboard >= 20% of stalls
SHARED_OPS_SHARE = (
    0.01  # kernelpilot: shared-memory instructions < 1% of instructions = MIO waits are not LDS
)
XU_QUIET_PCT = 30.0  # kernelpilot: below this the MIO waits are not transcendental (MUFU) results
DEPENDENT_SHARE = 0.40  # kernelpilot: wait + short_scoreboard >= 40% of stalls
ISSUE_LOW_PCT = 60.0
IDLE_LANES = 24.0  # kernelpilot: fewer than 24 of 32 threads do work per warp instruction
REPLICATED_FACTOR = 2.0  # kernelpilot: twice the algorithm's thread instructions per element

PRED_ON = "smsp__thread_inst_executed_pred_on_per_inst_executed.ratio"
ELIGIBLE = "smsp__warps_eligible.avg.per_cycle_active"
SHARED_OPS = "smsp__sass_inst_executed_op_shared.sum"
SELECTION = re.compile(r"top_?k|argmax|argmin|gating|gate|router|routing|select|sort|moe_align", re.I)
REDUCTION = re.compile(r"softmax|reduc|norm|sum|mean|logsumexp|scan|cumsum|argm", re.I)


def kind(kernel: str) -> str:
    """selection | reduction | other, from the kernel name (the levers differ: packed keys vs row layout)."""
    if SELECTION.search(kernel):
        return "selection"
    return "reduction" if REDUCTION.search(kernel) else "other"


_ISSUE_LEVERS = {
    "selection": (
        "cancel_softmax_denominator",
        "packed_key_selection",
        "warp_selection_rounds",
        "fewer_instructions",
    ),
    "reduction": ("avoid_replicated_epilogue", "row_mapping", "fewer_shuffle_steps", "fewer_instructions"),
    "other": ("fewer_instructions", "cheaper_instructions"),
}
_SHUFFLE_LEVERS = {
    "selection": ("packed_key_selection", "warp_selection_rounds", "row_mapping", "network_selection"),
    "reduction": ("fewer_shuffle_steps", "row_mapping", "avoid_replicated_epilogue"),
    "other": ("fewer_shuffle_steps", "row_mapping"),
}

# a masked shared-memory tree is the classic reduction case; a selection kernel idles lanes by its mapping
_IDLE_LEVERS = {"reduction": ("warp_shuffles", "fewer_shuffle_steps", "row_mapping")}


def _stall_share(c: Ctx, *reasons: str) -> tuple[float, float] | None:
    st = c.stalls()
    total = sum(st.values())
    if not total:
        return None
    part = sum(st.get(r, 0.0) for r in reasons)
    return part, part / total


def check_issue_bound(c: Ctx) -> Finding | Clear | None:
    issue, pipes = issue_active_pct(c.p), pipe_utilization(c.p)
    top = busiest(pipes)
    if issue is None or top is None:
        return None
    if issue < ISSUE_BOUND_PCT:
        return Clear(f"issue slots {issue:.0f}% busy (< {ISSUE_BOUND_PCT:g}%)")
    if top.pct >= PIPE_BUSY_PCT:
        return Clear(f"issue {issue:.0f}%, but pipe {top.pipe} is {top.pct:.0f}% busy (see pipe_saturation)")
    k = kind(c.p.kernel)
    gain = issue * REMOVABLE_SHARE
    inst = warp_instructions(c.p)
    ev: list[tuple[str, float | str]] = [(ISSUE_ACTIVE, issue), (top.metric, top.pct)]
    second = sorted(pipes.values(), key=lambda r: -r.pct)[1:3]
    ev.extend((r.metric, r.pct) for r in second)
    if inst is not None:
        ev.append(("smsp__inst_executed.sum", inst))
    return Finding(
        quantity=f"issue slots {issue:.1f}% busy while the busiest pipe ({top.pipe}) is {top.pct:.1f}%: "
        "no single pipe saturates, the number of instructions is the limit (issue roof)"
        + (f"; {inst:.3g} warp instructions" if inst is not None else ""),
        value=issue,
        unit="% of issue slots",
        gain_pct=gain,
        gain_formula=f"issue busy {issue:.1f}% x {REMOVABLE_SHARE} of the instructions removed (assumed) = "
        f"{gain:.1f}%",
        levers=_ISSUE_LEVERS[k],
        evidence=ev,
    )


def _isa_shuffles(c: Ctx) -> tuple[float, float] | None:
    shfl, total = c.isa_num("shuffles"), c.isa_num("instructions")
    return (shfl, total) if shfl is not None and total else None


def _mio_without_shared(c: Ctx) -> tuple[str, list[tuple[str, float | str]]] | None:
    """short_scoreboard (MIO result) stalls with no shared-memory instructions and a quiet XU: the MIO
    results awaited are shuffles (ncu: short_scoreboard covers shared memory, special math and shuffles)."""
    got = _stall_share(c, "short_scoreboard")
    shared, inst = c.f(SHARED_OPS), warp_instructions(c.p)
    xu = pipe_utilization(c.p).get("xu")
    if got is None or shared is None or not inst:
        return None
    part, share = got
    quiet = xu is None or xu.pct < XU_QUIET_PCT
    if share < MIO_STALL_SHARE or shared / inst >= SHARED_OPS_SHARE or not quiet:
        return None
    ev: list[tuple[str, float | str]] = [
        ("smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio", part),
        (SHARED_OPS, shared),
        ("smsp__inst_executed.sum", inst),
    ]
    if xu is not None:
        ev.append((xu.metric, xu.pct))
    return f"short_scoreboard {share:.0%} of stalls with {shared / inst:.2%} shared-memory instructions", ev


def check_shuffle_chain(c: Ctx) -> Finding | Clear | None:
    isa, mio = _isa_shuffles(c), _mio_without_shared(c)
    got = _stall_share(c, "short_scoreboard")
    if isa is None and got is None:
        return None
    shfl_share = isa[0] / isa[1] if isa else None
    if (shfl_share is None or shfl_share < SHUFFLE_SHARE) and mio is None:
        why = f"SHFL {shfl_share:.0%} of the ISA" if shfl_share is not None else ""
        if got is not None:
            why += ("; " if why else "") + f"short_scoreboard {got[1]:.0%} of stalls"
        return Clear(why + " (or shared memory / MUFU, not shuffles, feed them)")
    ev: list[tuple[str, float | str]] = []
    parts = []
    if isa is not None and shfl_share is not None:
        ev += [("isa.shuffles", isa[0]), ("isa.instructions", isa[1])]
        parts.append(f"SHFL {isa[0]:.0f} of {isa[1]:.0f} instructions ({shfl_share:.0%}) in the ISA")
    if mio is not None:
        parts.append(mio[0])
        ev += mio[1]
    issue = issue_active_pct(c.p)
    share = got[1] if got is not None else None
    gain: float | None = None
    formula = "not measured: no stall mix in this input"
    if share is not None and issue is not None:
        gain = share * (100 - issue) + (issue * shfl_share * 0.5 if shfl_share else 0.0)
        formula = f"short_scoreboard share {share:.2f} x (100 - issue {issue:.0f}%)" + (
            f" + issue {issue:.0f}% x SHFL share {shfl_share:.2f} x 0.5 (half the shuffles removed, assumed)"
            if shfl_share
            else ""
        )
        formula += f" = {gain:.1f}%"
    return Finding(
        quantity="serialized cross-lane reductions: " + "; ".join(parts),
        value=100 * (shfl_share if shfl_share is not None else (share or 0.0)),
        unit="% of instructions (SHFL)" if shfl_share is not None else "% of stalls (short_scoreboard)",
        gain_pct=gain,
        gain_formula=formula,
        levers=_SHUFFLE_LEVERS[kind(c.p.kernel)],
        evidence=ev,
    )


def check_dependent_issue(c: Ctx) -> Finding | Clear | None:
    got, issue = _stall_share(c, "wait", "short_scoreboard"), issue_active_pct(c.p)
    if got is None or issue is None:
        return None
    share = got[1]
    if share < DEPENDENT_SHARE or issue >= ISSUE_LOW_PCT:
        return Clear(f"wait+short_scoreboard {share:.0%} of stalls, issue {issue:.0f}% busy")
    st = c.stalls()
    gain = share * (100 - issue)
    elig = c.f(ELIGIBLE)
    k = kind(c.p.kernel)
    levers = ("increase_ilp",) if k == "other" else ("row_mapping", "fewer_shuffle_steps", "increase_ilp")
    return Finding(
        quantity=f"wait+short_scoreboard {share:.0%} of stalls, issue {issue:.0f}% busy"
        + (f", {elig:.2f} eligible warps/cycle" if elig is not None else "")
        + ": each instruction waits on the one before it (low ILP)",
        value=share * 100,
        unit="% of stalls",
        gain_pct=gain,
        gain_formula=f"dependent stall share {share:.2f} x (100 - issue {issue:.0f}%) = {gain:.1f}%",
        levers=levers,
        evidence=[
            ("smsp__average_warps_issue_stalled_wait_per_issue_active.ratio", st.get("wait", 0.0)),
            (
                "smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio",
                st.get("short_scoreboard", 0.0),
            ),
            (ISSUE_ACTIVE, issue),
            *([(ELIGIBLE, elig)] if elig is not None else []),
        ],
    )


def check_idle_lanes(c: Ctx) -> Finding | Clear | None:
    lanes, issue = c.f(PRED_ON), issue_active_pct(c.p)
    if lanes is None or issue is None:
        return None
    if lanes >= IDLE_LANES:
        return Clear(f"{lanes:.1f} of 32 threads active and predicated on per warp instruction")
    gain = issue * (1 - lanes / 32)
    return Finding(
        quantity=f"{lanes:.1f} of 32 threads do work per warp instruction: the rest are masked off "
        "(reduction tree steps with `if (tid < w)`, divergence, a lane-per-row layout with idle lanes)",
        value=lanes,
        unit="threads/warp instruction",
        gain_pct=gain,
        gain_formula=f"issue {issue:.0f}% x (1 - {lanes:.1f}/32 lanes) = {gain:.1f}% (the idle lanes' share "
        "of the issued instructions)",
        levers=_IDLE_LEVERS.get(kind(c.p.kernel), ("row_mapping", "fewer_shuffle_steps", "warp_shuffles")),
        evidence=[(PRED_ON, lanes), (ISSUE_ACTIVE, issue)],
    )


def check_replicated(c: Ctx) -> Finding | Clear | None:
    elements, expected = c.isa_num("elements"), c.isa_num("algorithm_inst_per_element")
    inst, lanes = warp_instructions(c.p), c.f(PRED_ON)
    if not elements or not expected or not inst or lanes is None:
        return None
    per = inst * lanes / elements
    ratio = per / expected
    if ratio < REPLICATED_FACTOR:
        return Clear(f"{per:.1f} thread instructions per element, {ratio:.1f}x the algorithm's {expected:g}")
    issue = issue_active_pct(c.p) or 0.0
    gain = issue * (1 - 1 / ratio)
    return Finding(
        quantity=f"{per:.1f} thread instructions per element, {ratio:.1f}x the algorithm's {expected:g}: "
        "work replicated across lanes (e.g. a Triton epilogue on a value derived from a row reduction "
        "runs once per lane that holds the row)",
        value=ratio,
        unit="x the algorithm's instructions",
        gain_pct=gain,
        gain_formula=f"issue {issue:.0f}% x (1 - 1/{ratio:.1f}) = {gain:.1f}% (the replicated share)",
        levers=("avoid_replicated_epilogue", "row_mapping", "fewer_instructions"),
        evidence=[
            ("smsp__inst_executed.sum", inst),
            (PRED_ON, lanes),
            ("isa.elements", elements),
            ("isa.algorithm_inst_per_element", expected),
        ],
    )


_STALLS = "smsp__average_warps_issue_stalled_*_per_issue_active.ratio"
RULES = (
    Rule(
        "issue_bound",
        "Instruction issue is the limit: issue slots busy, no pipe saturated",
        (
            ISSUE_ACTIVE,
            "sm__inst_executed_pipe_*.avg.pct_of_peak_sustained_active",
            "smsp__inst_executed.sum",
        ),
        f"{NCU_GUIDE} (Compute Workload Analysis: issue slots and pipelines; Scheduler Statistics); "
        f"{PG}#arithmetic-instructions (throughput per clock per multiprocessor)",
        check_issue_bound,
    ),
    Rule(
        "shuffle_chain",
        "Serialized cross-lane reductions (shuffle chains)",
        ("isa.shuffles", "isa.instructions", _STALLS, SHARED_OPS, "sm__inst_executed_pipe_xu.*"),
        f"{PG}#warp-shuffle-functions; {NCU_GUIDE} (Warp State Statistics: short_scoreboard; Pipelines: LSU "
        "issues shuffles)",
        check_shuffle_chain,
    ),
    Rule(
        "dependent_issue",
        "Dependent-issue stalls: each instruction waits for its predecessor (low ILP)",
        (_STALLS, ISSUE_ACTIVE, ELIGIBLE),
        f"{NCU_GUIDE} (Warp State Statistics: wait, short_scoreboard)",
        check_dependent_issue,
    ),
    Rule(
        "idle_lanes",
        "Few active threads per warp instruction (masked lanes, divergence)",
        (PRED_ON, ISSUE_ACTIVE),
        f"{NCU_GUIDE} (Instruction Statistics: thread instructions executed per instruction); "
        f"{PG}#simt-architecture",
        check_idle_lanes,
    ),
    Rule(
        "replicated_work",
        "Work replicated across lanes: thread instructions per element far above the algorithm's",
        ("smsp__inst_executed.sum", PRED_ON, "isa.elements", "isa.algorithm_inst_per_element"),
        f"{NCU_GUIDE} (Instruction Statistics); Triton layouts: https://github.com/triton-lang/triton/blob/"
        "main/python/triton/experimental/gluon/language/_layouts.py (SliceLayout)",
        check_replicated,
    ),
)

__all__ = ["RULES", "kind"]
