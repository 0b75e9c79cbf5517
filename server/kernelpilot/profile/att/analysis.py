"""ATT analysis: totals, wave-state split, stall taxonomy, per-class breakdown, hotspots, occupancy,
registers.

Pure functions over a `reader.Folder`; `profile_att` is the capability entry point. The figures follow the
definitions of the published FlyDSL analysis (REPORT.md beside the fixtures) so they can be checked against
it:
totals are sums of code.json's Latency/Stall/Idle columns; the wave-state split weights each wstates<N>.json
count by the time it held; stall shares are of the summed Stall column.
"""

from __future__ import annotations

import csv
import re
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from kernelpilot.isa.models import KernelResources
from kernelpilot.isa.occupancy_amd import amd_table_row, amd_waves, occupancy_amd, vgpr_file
from kernelpilot.profile.att import classify
from kernelpilot.profile.att.diagnose import diagnose
from kernelpilot.profile.att.models import (
    AttRequest,
    AttResult,
    AttTotals,
    ClassStats,
    ContextLine,
    Hotspot,
    RegisterPressure,
    SeOccupancy,
    StallBucket,
    WaveState,
    WaveSummary,
)
from kernelpilot.profile.att.reader import CodeTable, Folder, read_folder
from kernelpilot.profile.errors import AttFormatError

# Timeline state numbers of the decoder's wstates<N>.json, as the ATT viewer names them (the FlyDSL
# REPORT.md's
# "Timeline state mapping: 1=EXEC, 2=WAIT, 3=STALL, 4=SLEEP").
STATE_NAMES = {1: "EXEC", 2: "WAIT", 3: "STALL", 4: "SLEEP"}


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole else 0.0


def wave_states(folder: Folder) -> list[WaveState]:
    weights: dict[int, int] = {}
    for n, (s, t) in sorted(folder.wstates.items()):
        weights[n] = int((s[:-1] * (t[1:] - t[:-1])).sum()) if s.size > 1 else 0
    total = sum(weights.values())
    return [
        WaveState(state=n, name=STATE_NAMES.get(n, f"STATE{n}"), wave_cycles=w, share_pct=_pct(w, total))
        for n, w in weights.items()
    ]


def taxonomy(code: CodeTable) -> list[StallBucket]:
    stall: dict[str, int] = defaultdict(int)
    count: dict[str, int] = defaultdict(int)
    for r in code.rows:
        b = classify.stall_bucket(r[2])
        stall[b] += r[6]
        if r[6] > 0:
            count[b] += 1
    total = sum(stall.values())
    out = [
        StallBucket(
            bucket=b,
            label=classify.BUCKET_LABELS[b],
            stall_cycles=v,
            share_pct=_pct(v, total),
            instructions=count[b],
        )
        for b, v in stall.items()
        if v > 0
    ]
    return sorted(out, key=lambda x: (-x.stall_cycles, x.bucket))


def classes(code: CodeTable) -> list[ClassStats]:
    agg: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in code.rows:
        a = agg[classify.instruction_class(r[2])]
        a[0] += 1
        a[1] += r[4]
        a[2] += r[5]
        a[3] += r[6]
    lat = sum(a[2] for a in agg.values())
    st = sum(a[3] for a in agg.values())
    out = [
        ClassStats(
            cls=c,
            count=a[0],
            hits=a[1],
            latency_cycles=a[2],
            stall_cycles=a[3],
            latency_pct=_pct(a[2], lat),
            stall_pct=_pct(a[3], st),
        )
        for c, a in agg.items()
    ]
    return sorted(out, key=lambda x: (-x.latency_cycles, x.cls))


class _Sources:
    """Line text of `file:line` from the captured snapshots (read once per file, on demand)."""

    def __init__(self, snapshots: dict[str, Path]) -> None:
        self.snapshots = snapshots
        self.cache: dict[str, list[str] | None] = {}

    def line(self, loc: str) -> str | None:
        path, _, num = loc.rpartition(":")
        if not path or not num.isdigit():
            return None
        if path not in self.cache:
            local = self.snapshots.get(path)
            try:
                self.cache[path] = local.read_text(errors="replace").splitlines() if local else None
            except OSError:
                self.cache[path] = None
        lines = self.cache[path]
        n = int(num)
        if not lines or not 1 <= n <= len(lines):
            return None
        return lines[n - 1].strip()


def hotspots(folder: Folder, by: str, top: int, context: int, tot_lat: int, tot_stall: int) -> list[Hotspot]:
    rows = folder.code.rows
    vals = [r[6] if by == "stall" else r[5] for r in rows]
    order = sorted(range(len(rows)), key=lambda i: (-vals[i], rows[i][1]))
    src = _Sources(folder.snapshots)
    out: list[Hotspot] = []
    for rank, i in enumerate(order[:top], 1):
        r = rows[i]
        if vals[i] <= 0:
            break
        ctx = [
            ContextLine(index=rows[j][0], address=rows[j][1], instruction=rows[j][2], hot=j == i)
            for j in range(max(0, i - context), min(len(rows), i + context + 1))
        ]
        out.append(
            Hotspot(
                rank=rank,
                index=r[0],
                address=r[1],
                instruction=r[2],
                hits=r[4],
                latency_cycles=r[5],
                stall_cycles=r[6],
                idle_cycles=r[7],
                stall_share_pct=_pct(r[6], tot_stall),
                latency_share_pct=_pct(r[5], tot_lat),
                bucket=classify.stall_bucket(r[2]),
                cls=classify.instruction_class(r[2]),
                source=r[3] or None,
                source_text=src.line(r[3]) if r[3] else None,
                context=ctx if context else [],
            )
        )
    return out


def wave_summary(folder: Folder) -> WaveSummary | None:
    if not folder.waves:
        return None
    per_se: dict[str, int] = defaultdict(int)
    for w in folder.waves:
        per_se[f"SE{w.se}"] += 1
    durs = sorted(w.end - w.begin for w in folder.waves)
    begins = [w.begin for w in folder.waves]
    ends = [w.end for w in folder.waves]
    return WaveSummary(
        count=len(folder.waves),
        per_se=dict(sorted(per_se.items())),
        duration_min_cycles=durs[0],
        duration_median_cycles=int(statistics.median(durs)),
        duration_max_cycles=durs[-1],
        begin_spread_cycles=max(begins) - min(begins),
        end_spread_cycles=max(ends) - min(ends),
    )


def occupancy(folder: Folder) -> list[SeOccupancy]:
    """Resident waves per SE (all its CUs, not only the traced one) from the start(1)/end(0) events "
    "(column 4) of occupancy.json."""
    out: list[SeOccupancy] = []
    for se, evs in sorted(folder.occupancy.items(), key=lambda kv: (len(kv[0]), kv[0])):
        if not evs:
            continue
        ordered = sorted(evs, key=lambda e: (e[0], -int(e[4])))
        t0, t1 = int(ordered[0][0]), int(ordered[-1][0])
        cur = peak = started = 0
        area = 0
        last_t = t0
        level: list[tuple[int, int]] = []
        for e in ordered:
            t = int(e[0])
            area += cur * (t - last_t)
            last_t = t
            cur += 1 if int(e[4]) else -1
            started += 1 if int(e[4]) else 0
            peak = max(peak, cur)
            level.append((t, cur))
        window = t1 - t0
        half_t = t0
        for t, c in level:
            if c * 2 >= peak:
                half_t = t
        # the last time residency was at least half the peak: the tail starts when it next drops
        after = [t for t, c in level if t >= half_t and c * 2 < peak]
        tail_start = after[0] if after else t1
        out.append(
            SeOccupancy(
                se=f"SE{se}",
                waves_started=started,
                mean_resident=area / window if window else float(peak),
                peak_resident=peak,
                window_cycles=window,
                tail_pct=_pct(t1 - tail_start, window),
            )
        )
    return out


def totals(folder: Folder) -> AttTotals:
    rows = folder.code.rows
    lat = sum(r[5] for r in rows)
    st = sum(r[6] for r in rows)
    span = (max(w.end for w in folder.waves) - min(w.begin for w in folder.waves)) if folder.waves else 0
    window_us = clock_mhz = span_us = None
    rt = folder.realtime or {}
    freq = (rt.get("metadata") or {}).get("frequency") if isinstance(rt.get("metadata"), dict) else None
    pairs = [v for k, v in rt.items() if k.startswith("SE") and isinstance(v, list) and len(v) >= 2]
    if freq and pairs:
        try:
            first, last = pairs[0][0], pairs[0][-1]
            ticks = float(last[1] - first[1])
            window_us = ticks / float(freq) * 1e6
            if ticks > 0:
                clock_mhz = (last[0] - first[0]) / (ticks / float(freq)) / 1e6
                span_us = span / clock_mhz if clock_mhz else None
        except (TypeError, IndexError, ZeroDivisionError):
            folder.warnings.append("realtime.json: could not read [gfx_clock, realtime] pairs")
    occ_t = [int(e[0]) for evs in folder.occupancy.values() for e in evs]
    dispatch = (max(occ_t) - min(occ_t)) if occ_t else None
    return AttTotals(
        dispatch_cycles=dispatch,
        dispatch_us=dispatch / clock_mhz if dispatch is not None and clock_mhz else None,
        instructions=len(rows),
        hits=sum(r[4] for r in rows),
        latency_cycles=lat,
        stall_cycles=st,
        idle_cycles=sum(r[7] for r in rows),
        stall_ratio_pct=_pct(st, lat),
        waves_sampled=len(folder.waves),
        instructions_executed=sum(w.num_insts for w in folder.waves),
        sampled_span_cycles=span,
        trace_window_us=window_us,
        shader_clock_mhz=clock_mhz,
        sampled_span_us=span_us,
    )


_VREG = re.compile(r"\bv(\d+)\b|\bv\[(\d+):(\d+)\]")


def isa_max_vgpr(code: CodeTable) -> int | None:
    hi = -1
    for r in code.rows:
        for m in _VREG.finditer(r[2]):
            hi = max(hi, int(m.group(1) if m.group(1) is not None else m.group(3)))
    return hi + 1 if hi >= 0 else None


def _kernel_trace_row(path: Path, kernel: str | None, dispatch: int | None) -> dict[str, str] | None:
    try:
        with path.open(newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise AttFormatError(
            f"{path}: cannot read kernel trace ({exc})", "give a rocprofv3 kernel_trace.csv"
        ) from exc
    if rows and "VGPR_Count" not in rows[0]:
        return None
    pat = re.compile(kernel) if kernel else None
    named = [r for r in rows if pat is None or pat.search(r.get("Kernel_Name", ""))]
    exact = [r for r in named if dispatch is not None and r.get("Dispatch_Id") == str(dispatch)]
    pick = exact or named
    return pick[0] if pick else None


def _gpu_arch(path: Path) -> str | None:
    """The gfx target of the first GPU agent in a rocprofv3 agent_info.csv (its `Name` column)."""
    try:
        with path.open(newline="") as fh:
            for row in csv.DictReader(fh):
                name = (row.get("Name") or "").strip()
                if row.get("Agent_Type") == "GPU" and name.startswith("gfx"):
                    return name
    except (OSError, csv.Error, UnicodeDecodeError):
        return None
    return None


@dataclass
class _Regs:
    """Register/LDS/block/arch facts gathered from the request, then a code object, then a kernel trace."""

    vg: int | None
    ag: int | None
    sg: int | None
    lds: int | None
    block: int | None
    arch: str | None
    source: str = "request"


def _from_code_object(req: AttRequest, kernel: str | None, r: _Regs) -> None:
    if not req.code_object:
        return
    from kernelpilot.isa.api import IsaResourcesRequest
    from kernelpilot.isa.core import isa_resources

    res = isa_resources(IsaResourcesRequest(file=req.code_object, kernel=req.kernel or kernel, arch=r.arch))
    ks = [k for k in res.kernels if k.vendor == "amd"]
    if ks:
        k0 = ks[0]
        r.vg = r.vg or k0.registers
        r.ag = r.ag if r.ag is not None else k0.agprs
        r.sg = r.sg if r.sg is not None else k0.sgprs
        r.lds = r.lds if r.lds is not None else k0.static_shared_bytes
        r.block = r.block or k0.max_threads_per_block
        r.arch = r.arch or k0.arch
        r.source = f"code object {req.code_object}"


def _from_kernel_trace(req: AttRequest, folder: Folder, kernel: str | None, r: _Regs) -> Path | None:
    """Fill what is still unknown from `*kernel_trace.csv` (given, or beside the folder); returns its path."""
    m = re.match(r"ui_output_agent_\d+_dispatch_(\d+)", folder.path.name)
    dispatch = int(m.group(1)) if m else None
    trace = Path(req.kernel_trace) if req.kernel_trace else None
    if trace is None:
        for d in (folder.path, folder.path.parent):
            found = sorted(d.glob("*kernel_trace.csv"))
            if found:
                trace = found[0]
                break
    if trace is not None and (r.vg is None or r.lds is None or r.block is None):
        row = _kernel_trace_row(trace, req.kernel or (re.escape(kernel) if kernel else None), dispatch)
        if row:
            r.vg = r.vg or int(row["VGPR_Count"])
            r.ag = r.ag if r.ag is not None else int(row.get("Accum_VGPR_Count") or 0)
            r.sg = r.sg if r.sg is not None else int(row.get("SGPR_Count") or 0)
            r.lds = r.lds if r.lds is not None else int(row.get("LDS_Block_Size") or 0)
            if r.block is None:
                r.block = 1
                for a in "XYZ":
                    r.block *= max(1, int(row.get(f"Workgroup_Size_{a}") or 1))
            r.source = f"kernel trace {trace.name} (Dispatch_Id {row.get('Dispatch_Id')})"
    return trace


def _find_arch(trace: Path | None, folder: Folder) -> str | None:
    dirs = [trace.parent] if trace is not None else []
    for d in [*dirs, folder.path, folder.path.parent]:
        found_arch = [g for p in sorted(d.glob("*agent_info.csv")) if (g := _gpu_arch(p))]
        if found_arch:
            return found_arch[0]
    return None


def register_pressure(req: AttRequest, folder: Folder, kernel: str | None) -> RegisterPressure | None:
    """Waves per SIMD and the VGPR step to the next wave, through the ISA occupancy model
    (`isa.occupancy`)."""
    r = _Regs(req.vgprs, req.agprs, req.sgprs, req.lds_bytes, req.block_size, req.arch)
    _from_code_object(req, kernel, r)
    trace = _from_kernel_trace(req, folder, kernel, r)
    if r.arch is None:
        r.arch = _find_arch(trace, folder)
    vg, ag, sg, lds, block, arch, source = r.vg, r.ag, r.sg, r.lds, r.block, r.arch, r.source
    scan = isa_max_vgpr(folder.code)
    if vg is not None and scan is not None and scan > vg + (ag or 0) and not req.vgprs:
        folder.warnings.append(
            f"{source} gives {vg} VGPRs but the disassembly names v0..v{scan - 1}: using {scan} (a "
            f"recorded count "
            "below the registers the code uses cannot be right)"
        )
        vg, ag = scan, 0
    if vg is None or arch is None:
        if scan is not None:
            folder.warnings.append(
                f"register pressure: disassembly names v0..v{scan - 1}; give arch and vgprs (or a code "
                f"object / "
                "kernel_trace.csv) for waves per SIMD"
            )
        return None
    # CDNA unified register file: arch VGPRs and AGPRs are allocated from one pool (AMD CDNA3 ISA guide,
    # "unified
    # VGPR file"; LLVM AMDGPU getTotalNumVGPRs), so occupancy divides the pool by their sum.
    total_vgprs = vg + (ag or 0)
    kr = KernelResources(
        name=kernel or "kernel",
        demangled=kernel or "kernel",
        vendor="amd",
        arch=arch,
        entry="att",
        registers=total_vgprs,
        sgprs=sg,
        static_shared_bytes=lds,
    )
    occ = occupancy_amd(kr, arch, block or 256, 0)
    row_cu = amd_table_row(arch)
    vgpr_waves = amd_waves(row_cu, kr, 64).get("vgprs")
    budget = to_free = None
    if vgpr_waves is not None and vgpr_waves < row_cu.max_waves_per_simd:
        total, gran = vgpr_file(row_cu, 64)
        budget = (total // (vgpr_waves + 1)) // gran * gran
        to_free = total_vgprs - budget
    return RegisterPressure(
        source=source,
        arch=occ.arch,
        vgprs=vg,
        agprs=ag,
        sgprs=sg,
        lds_bytes=lds,
        block_size=block or 256,
        waves_per_simd=occ.waves_per_simd,
        vgpr_waves_per_simd=vgpr_waves,
        limiter=occ.limiter,
        vgprs_for_next_wave=budget,
        vgprs_to_free=to_free,
        steps=[f"{s.limiter}: {s.change} -> {s.gives}" for s in occ.next_step],
        isa_max_vgpr=scan,
        sources=occ.sources,
    )


def analyse(folder: Folder, req: AttRequest) -> AttResult:
    tot = totals(folder)
    kernel = next((v for k, v in sorted(folder.dispatch_names.items()) if k != "0"), None)
    res = AttResult(
        path=str(folder.path),
        dispatch=folder.path.name,
        kernel=kernel,
        version=folder.code.version,
        totals=tot,
        wave_states=wave_states(folder),
        stall_taxonomy=taxonomy(folder.code),
        classes=classes(folder.code),
        hotspots_by_stall=hotspots(
            folder, "stall", req.top, req.context, tot.latency_cycles, tot.stall_cycles
        ),
        hotspots_by_latency=hotspots(
            folder, "latency", req.top, req.context, tot.latency_cycles, tot.stall_cycles
        ),
        waves=wave_summary(folder),
        occupancy=occupancy(folder),
        registers=register_pressure(req, folder, kernel),
        source_mapped=sum(1 for r in folder.code.rows if r[3]),
        max_chars=req.max_chars,
    )
    res.findings = diagnose(res, folder.code)
    res.warnings = list(folder.warnings)
    return res


def profile_att(req: AttRequest) -> AttResult:
    """Capability `profile_att`: read a decoded ATT dispatch folder and analyse it."""
    return analyse(read_folder(req.path), req)
