"""Text view of an ATT analysis sized for an agent's context (default about 3,000 characters).

Sections in order of value; a section that would overflow the budget is shortened (fewer hotspots, no context)
and the view says what it left out, so nothing is silently cut.
"""

from __future__ import annotations

from kernelpilot.profile.att.models import AttResult, Hotspot


def cyc(n: float) -> str:
    """Cycle counts as the published reports print them: 2.86M, 492.9K, 640."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.2f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}K"
    return str(int(n))


def _hot(h: Hotspot, with_ctx: bool, key: str) -> list[str]:
    val = h.stall_cycles if key == "stall" else h.latency_cycles
    share = h.stall_share_pct if key == "stall" else h.latency_share_pct
    src = f"  {h.source.rsplit('/', 1)[-1]}" if h.source else ""
    lines = [
        f"  {h.rank:>2}. PC {h.address:<6} {cyc(val):>7} {share:4.1f}% hit {h.hits:<4} "
        f"{h.instruction[:44]}{src}"
    ]
    if with_ctx:
        if h.source_text:
            lines.append(f"      src: {h.source_text[:90]}")
        for c in h.context:
            if not c.hot:
                lines.append(f"      {c.address:<6} {c.instruction[:60]}")
    return lines


def render(res: AttResult, budget: int = 3000) -> str:
    t = res.totals
    head = [
        f"ATT {res.dispatch}"
        + (f"  kernel {res.kernel}" if res.kernel else "")
        + f"  (format {res.version})",
        f"totals: latency {cyc(t.latency_cycles)}  stall {cyc(t.stall_cycles)} ({t.stall_ratio_pct:.1f}%)  "
        f"idle {cyc(t.idle_cycles)}  insts {t.instructions} static / {t.instructions_executed} executed  "
        f"waves {t.waves_sampled}",
    ]
    if t.sampled_span_us is not None and t.shader_clock_mhz is not None:
        head.append(
            (
                f"dispatch {cyc(t.dispatch_cycles)} cycles = {t.dispatch_us:.1f} us, "
                if t.dispatch_us is not None and t.dispatch_cycles is not None
                else ""
            )
            + f"sampled waves span {cyc(t.sampled_span_cycles)} cycles = {t.sampled_span_us:.1f} us "
            f"(shader clock {t.shader_clock_mhz:.0f} MHz, measured)"
        )
    if res.wave_states:
        head.append("wave states: " + "  ".join(f"{w.name} {w.share_pct:.1f}%" for w in res.wave_states))
    head.append(
        "stall taxonomy: "
        + ", ".join(f"{b.label} {cyc(b.stall_cycles)} {b.share_pct:.1f}%" for b in res.stall_taxonomy)
    )
    head.append(
        "classes (lat%/stall%): "
        + ", ".join(f"{c.cls} {c.count} {c.latency_pct:.1f}/{c.stall_pct:.1f}" for c in res.classes)
    )
    if res.occupancy:
        occ = [
            (o.se, f"mean {o.mean_resident:.1f} peak {o.peak_resident} tail {o.tail_pct:.0f}%")
            for o in res.occupancy
        ]
        if len({v for _, v in occ}) == 1 and len(occ) > 1:
            occ = [(f"{occ[0][0]}..{occ[-1][0]} each", occ[0][1])]
        head.append("occupancy (waves resident per SE): " + ", ".join(f"{k} {v}" for k, v in occ))
    if res.registers:
        r = res.registers
        nxt = f", free {r.vgprs_to_free} VGPRs for +1 wave by VGPRs" if r.vgprs_to_free is not None else ""
        head.append(
            f"registers ({r.arch}): {r.vgprs} VGPRs -> {r.waves_per_simd} waves/SIMD, limiter "
            f"{r.limiter}{nxt}"
        )

    def tail(levers: int) -> list[str]:
        out: list[str] = []
        for f in res.findings:
            out.append(f"finding {f.rule}: {f.verdict} - {f.measured}")
            out += [f"  lever: {lv}" for lv in f.levers[:levers]]
        return out + [f"warning: {w}" for w in res.warnings]

    def build(n_stall: int, n_lat: int, ctx_n: int, levers: int) -> str:
        body = [f"top {n_stall} by stall (PC, cycles, % of stall, hits, instruction, source):"]
        for h in res.hotspots_by_stall[:n_stall]:
            body += _hot(h, h.rank <= ctx_n, "stall")
        if n_lat:
            body.append(f"top {n_lat} by latency:")
            for h in res.hotspots_by_latency[:n_lat]:
                body += _hot(h, False, "latency")
        omitted = (len(res.hotspots_by_stall) - n_stall) + (len(res.hotspots_by_latency) - n_lat)
        if omitted > 0:
            body.append(
                f"({omitted} more hotspots" + (", and their context," if not ctx_n else "") + " in --json)"
            )
        return "\n".join(head + body + tail(levers))

    n_stall, n_lat, ctx_n, levers = len(res.hotspots_by_stall), min(5, len(res.hotspots_by_latency)), 3, 2
    text = build(n_stall, n_lat, ctx_n, levers)
    # shed detail in order of least value until the view fits: context, latency list, levers, stall list
    while len(text) > budget and (ctx_n or n_lat or levers or n_stall > 1):
        if ctx_n:
            ctx_n -= 1
        elif n_lat:
            n_lat -= 1
        elif n_stall > 5:
            n_stall -= 1
        elif levers:
            levers -= 1
        else:
            n_stall -= 1
        text = build(n_stall, n_lat, ctx_n, levers)
    if len(text) > budget:
        text = text[: budget - 40].rsplit("\n", 1)[0] + "\n(cut to fit; --json has everything)"
    return text
