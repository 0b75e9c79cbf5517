"""AMD findings from an ATT analysis: rule name, measured quantity, evidence lines, levers (pure function).

Thresholds are judgement, not hardware facts; each finding states the measured number it fired on so an agent
can weigh it. `analysis.analyse` attaches the findings; `verdict.att_verdict` turns them into a bottleneck
verdict.
"""

from __future__ import annotations

from kernelpilot.profile.att import classify
from kernelpilot.profile.att.models import AttResult, Finding, Hotspot
from kernelpilot.profile.att.reader import CodeTable

VMEM_WAIT_PCT = 20.0  # share of stall in vmcnt waits that makes memory latency the first lever
LGKM_WAIT_PCT = 15.0
BARRIER_PCT = 10.0
VMEM_ISSUE_PCT = 10.0
STALL_BOUND_PCT = 50.0
PROLOGUE_LOOKBACK = 8  # instructions before a wait searched for the load it waits on
NEAR_THRESHOLD_VGPRS = 16  # "just over a wave threshold": this few VGPRs from one more wave per SIMD
TAIL_PCT = 50.0  # more than half the window with under half the peak residency


def _where(h: Hotspot) -> str:
    src = f" {h.source}" if h.source else ""
    return (
        f"PC {h.address} `{h.instruction}` stall {h.stall_cycles} cycles ({h.stall_share_pct:.1f}% of "
        f"stall), "
        f"hit {h.hits}{src}"
    )


def _share(res: AttResult, bucket: str) -> tuple[float, int]:
    for b in res.stall_taxonomy:
        if b.bucket == bucket:
            return b.share_pct, b.stall_cycles
    return 0.0, 0


def _producer(code: CodeTable, index: int) -> str | None:
    """Mnemonic of the nearest memory op before row `index` (what a wait most likely waits on)."""
    pos = {r[0]: i for i, r in enumerate(code.rows)}
    i = pos.get(index)
    if i is None:
        return None
    for j in range(i - 1, max(-1, i - 1 - PROLOGUE_LOOKBACK), -1):
        b = classify.instruction_class(code.rows[j][2])
        if b in ("smem", "vmem", "lds"):
            return classify.mnemonic(code.rows[j][2]) + (" lds" if " lds" in code.rows[j][2] else "")
    return None


def _bpermute_chains(code: CodeTable) -> tuple[int, int]:
    """(serialized cross-lane ops, their wait stall): ds_bpermute/ds_permute/ds_swizzle each drained alone."""
    rows = code.rows
    n = stall = 0
    for i, r in enumerate(rows):
        op = classify.mnemonic(r[2])
        if not op.startswith(("ds_bpermute", "ds_permute", "ds_swizzle")):
            continue
        for j in range(i + 1, min(len(rows), i + 4)):
            nxt = rows[j][2].lower()
            if nxt.startswith("s_waitcnt") and "lgkmcnt(0)" in nxt:
                n += 1
                stall += rows[j][6]
                break
            if classify.mnemonic(nxt).startswith("ds_"):
                break
    return n, stall


def _stall_bound(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Most sampled cycles are stalls."""
    t = res.totals
    if t.stall_ratio_pct >= STALL_BOUND_PCT:
        top = ", ".join(f"{b.label} {b.share_pct:.1f}%" for b in res.stall_taxonomy[:3])
        out.append(
            Finding(
                rule="att_stall_bound",
                verdict="latency/stall-bound",
                measured=f"{t.stall_ratio_pct:.1f}% of sampled cycles are stall "
                f"({t.stall_cycles} of {t.latency_cycles})",
                evidence=[f"largest stall buckets: {top}"],
                levers=["fix the largest stall bucket first (findings below); MFMA issue tuning comes after"],
            )
        )


def _vmem_wait(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Waits on vector-memory loads (s_waitcnt vmcnt)."""
    by_stall = res.hotspots_by_stall
    share, cyc = _share(res, "vmem_wait")
    if share >= VMEM_WAIT_PCT:
        hot = [h for h in by_stall if h.bucket == "vmem_wait"][:4]
        dma = [h for h in hot if (_producer(code, h.index) or "").endswith(" lds")]
        levers = [
            "issue the next tile's loads earlier: deeper prefetch / software pipelining (one more buffer "
            "stage)",
            "wait for fewer operations: s_waitcnt vmcnt(N>0) instead of vmcnt(0) where later loads are "
            "independent",
            "put independent work (softmax, address math, the other GEMM) between the load and its wait",
        ]
        if dma:
            levers.insert(
                0, "the waits drain DMA-to-LDS loads (buffer_load ... lds): raise the prefetch distance"
            )
        out.append(
            Finding(
                rule="att_vmem_wait",
                verdict="memory-latency-bound (VMEM waits)",
                measured=f"{share:.1f}% of stall ({cyc} cycles) in s_waitcnt vmcnt waits",
                evidence=[_where(h) for h in hot],
                levers=levers,
            )
        )


def _lgkm_wait(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Waits on LDS/scalar memory, incl. a kernarg prologue wait."""
    by_stall = res.hotspots_by_stall
    share, cyc = _share(res, "lgkm_wait")
    if share >= LGKM_WAIT_PCT or any(h.bucket == "lgkm_wait" for h in by_stall[:6]):
        hot = [h for h in by_stall if h.bucket == "lgkm_wait"][:4]
        kernarg = [h for h in hot if (_producer(code, h.index) or "").startswith("s_load")]
        k_cyc = sum(h.stall_cycles for h in kernarg)
        levers = [
            "prefetch LDS reads one step ahead and interleave ds_read with MFMA so lgkmcnt waits shrink"
        ]
        prologue = (
            "kernel-argument (s_load) wait in the prologue: issue the s_loads first and do independent setup "
            "before the wait, or preload kernargs into SGPRs where the compiler supports it"
        )
        if kernarg:  # first when the prologue wait is most of the lgkm stall
            levers.insert(0 if k_cyc * 2 > cyc else len(levers), prologue)
        if share >= LGKM_WAIT_PCT or kernarg:
            part = f"; {k_cyc} of them ({100 * k_cyc / cyc:.0f}%) wait on kernarg s_loads" if kernarg else ""
            out.append(
                Finding(
                    rule="att_lgkm_wait",
                    verdict="LDS/scalar-memory waits" + (" incl. a kernarg prologue wait" if kernarg else ""),
                    measured=f"{share:.1f}% of stall ({cyc} cycles) in s_waitcnt lgkmcnt waits{part}",
                    evidence=[_where(h) for h in hot]
                    + [f"PC {h.address}: waits on {_producer(code, h.index)}" for h in kernarg],
                    levers=levers,
                )
            )


def _barrier_and_issue(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Barrier stalls, and VMEM issue back-pressure."""
    by_stall = res.hotspots_by_stall
    share, cyc = _share(res, "barrier")
    if share >= BARRIER_PCT:
        out.append(
            Finding(
                rule="att_barrier",
                verdict="synchronization-bound (barriers)",
                measured=f"{share:.1f}% of stall ({cyc} cycles) at s_barrier",
                evidence=[_where(h) for h in by_stall if h.bucket == "barrier"][:3],
                levers=[
                    "split hard s_waitcnt(0) + s_barrier boundaries; fewer barriers per tile "
                    "(double-buffer LDS)"
                ],
            )
        )
    ld, ldc = _share(res, "vmem_load")
    sd, sdc = _share(res, "vmem_store")
    if ld + sd >= VMEM_ISSUE_PCT:
        out.append(
            Finding(
                rule="att_vmem_issue",
                verdict="VMEM issue back-pressure",
                measured=f"{ld + sd:.1f}% of stall ({ldc + sdc} cycles) issuing VMEM loads/stores",
                evidence=[_where(h) for h in by_stall if h.bucket in ("vmem_load", "vmem_store")][:3],
                levers=[
                    "wider, fewer memory instructions (dwordx4), spread loads across the loop instead of "
                    "bursts"
                ],
            )
        )


def _serialized_bpermute(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Cross-lane permutes each drained by their own wait."""
    n, st = _bpermute_chains(code)
    if n >= 2:
        out.append(
            Finding(
                rule="att_serialized_bpermute",
                verdict="serialized cross-lane reduction",
                measured=f"{n} ds_bpermute/permute/swizzle ops each drained by lgkmcnt(0); "
                f"{st} stall cycles there",
                evidence=[f"{n} cross-lane LDS ops followed by s_waitcnt lgkmcnt(0) within 3 instructions"],
                levers=[
                    "restructure the reduction: DPP / v_permlane ops instead of LDS permutes, or issue "
                    "all permutes "
                    "before one wait"
                ],
            )
        )


def _register_pressure(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Occupancy bound by, or near a threshold of, VGPRs."""
    reg = res.registers
    if reg and reg.vgprs_to_free is not None and reg.vgpr_waves_per_simd is not None:
        near = reg.vgprs_to_free <= NEAR_THRESHOLD_VGPRS
        binds = reg.limiter in ("vgprs", "waves") and reg.waves_per_simd == reg.vgpr_waves_per_simd
        if near or binds:
            note = (
                ""
                if binds
                else f"; {reg.limiter} limits first at {reg.waves_per_simd} waves/SIMD, so fewer "
                "VGPRs alone gain nothing"
            )
            out.append(
                Finding(
                    rule="att_register_pressure",
                    verdict="occupancy limited by VGPRs" if binds else "VGPRs near a wave threshold",
                    measured=(
                        f"{reg.vgprs} VGPRs -> {reg.vgpr_waves_per_simd} waves/SIMD by VGPRs; free "
                        f"{reg.vgprs_to_free} (to {reg.vgprs_for_next_wave}) for one more{note}"
                    ),
                    evidence=[f"registers from {reg.source}", *reg.steps],
                    levers=[
                        "register reduction: shorter live ranges in the softmax/packing path, fewer unrolled "
                        "accumulators, launch_bounds / amdgpu_waves_per_eu hints"
                    ],
                )
            )


def _occupancy_tail(res: AttResult, code: CodeTable, out: list[Finding]) -> None:
    """Dispatches that leave the GPU under-filled."""
    tails = [o for o in res.occupancy if o.tail_pct >= TAIL_PCT]
    if tails:
        out.append(
            Finding(
                rule="att_occupancy_tail",
                verdict="under-filled or long-tailed dispatch",
                measured=", ".join(
                    f"{o.se}: {o.tail_pct:.0f}% of the window below half peak residency" for o in tails
                ),
                evidence=[
                    f"{o.se}: mean {o.mean_resident:.1f} / peak {o.peak_resident} waves" for o in tails
                ],
                levers=[
                    "more workgroups (grid) or a persistent schedule; capture a shape that fills the GPU"
                ],
            )
        )


_RULES = (
    _stall_bound,
    _vmem_wait,
    _lgkm_wait,
    _barrier_and_issue,
    _serialized_bpermute,
    _register_pressure,
    _occupancy_tail,
)


def diagnose(res: AttResult, code: CodeTable) -> list[Finding]:
    """Findings of every rule, in rule order (stall-bound first)."""
    out: list[Finding] = []
    for rule in _RULES:
        rule(res, code, out)
    return out
