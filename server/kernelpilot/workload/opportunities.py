"""Opportunities: µs per step a change could win back, each with the formula that gives it, ranked.

- headroom: a hot kernel's time above its attainable roof, time × (1 - achieved/attainable), from the
  drill-down (workload/drill.py: roofline position from the cited peaks); without a drill-down, from the
  shapes the trace recorded (workload/trace_roofline.py: computed, not measured, labelled so), with the
  latency floor of a launch; its next step is `workload isolate` (a standalone benchmark of the row);
- launch overhead and idle: the step's launch-bound idle time, which replaying the step as a CUDA/HIP graph
  removes (playbooks/cuda.md, "L5. Launch overhead and kernel boundaries"). Measured under the profiler,
  whose per-launch recording slows the host: an upper bound, labelled so, with the tracer's cost per launch
  where the capture also timed the step without it;
- fusion: chains of back-to-back small memory-bound kernels (elementwise, normalization, dtype copies,
  reductions) on one stream in a step. Fusing a
  chain into one kernel leaves about one pass over the data, so the estimate is the chain's time minus its
  longest member, the launches saved are its length minus one, and the bytes no longer written and read back
  are twice each later member's first input (from the op shapes `record_shapes` records).
"""

from __future__ import annotations

import math
import operator
import re
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from kernelpilot.workload.models import Opportunity, StepSummary, WorkloadKernel
from kernelpilot.workload.readers.trace import Activity, Trace

# memory-bound kernel categories a fused kernel absorbs: an eager RMSNorm is a dtype copy, a pow, a mean
# reduction, an add, an rsqrt and two muls (bench/workload_model.py); device memcpy/memset are not kernels
FUSABLE = ("elementwise", "normalization", "copy_memset", "reduction")
SMALL_LAUNCH_US = 20.0  # a launch this short is dominated by its fixed costs; a fusion candidate
MIN_SAVING_US = 0.5  # opportunities below this per step are noise next to step-to-step spread


_START = operator.attrgetter("start_us")


def _share(us: float, step: StepSummary) -> float | None:
    base = step.event_step_us or (step.wall_us if step.marked else None) or step.kernel_us
    return us / base if base else None


def _slug(k: WorkloadKernel) -> str:
    return re.sub(r"[^a-z0-9]+", "-", k.short_name.lower()).strip("-")[:40] or "kernel"


def _fnum(d: dict[str, Any], *keys: str) -> float | None:
    for key in keys:
        v = d.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return None


ISOLATE_WRITES = "(writes bench_<op>.py with make(), the contract for kernelpilot eval and the roofline args "
ISOLATE_WRITES += "for workspace init)"


def isolate_command(source: str, row: int) -> str:
    return f"kernelpilot workload isolate {source} --kernel {row} {ISOLATE_WRITES}"


def retarget_isolate(opps: list[Opportunity], captured: str, saved: str | None) -> None:
    """`workload run`: the captured trace is a temporary file; isolate reads the one --save-trace kept, or
    says to keep one."""
    prefix = f"kernelpilot workload isolate {captured} "
    for o in opps:
        if not o.next_command.startswith(prefix):
            continue
        rest = o.next_command[len(prefix) :]
        o.next_command = (
            f"kernelpilot workload isolate {saved} {rest}"
            if saved
            else "run again with --save-trace trace.json, then kernelpilot workload isolate trace.json "
            + rest
        )


def _trace_headroom(k: WorkloadKernel, row: int, step: StepSummary, source: str) -> Opportunity | None:
    """A hot row's time above the floor computed from its recorded shapes (workload/trace_roofline.py)."""
    t = k.trace_roofline or {}
    saving = _fnum(t, "headroom_us_per_step")
    floor, share = _fnum(t, "floor_us"), _fnum(t, "share_of_floor")
    if saving is None or floor is None or share is None:
        return None
    formula = (
        f"{k.us_per_step:.1f} µs/step × (1 − floor {floor:.2f} µs / median launch "
        f"{k.launch.median_us:.2f} µs) = {saving:.1f} µs/step; {t.get('basis')}"
    )
    evidence = [
        f"{k.shape_op} {k.input_shapes}: {t.get('op')} ({t.get('formula')})",
        f"bound: {t.get('bound')}; floor from bytes and FLOPs {_fnum(t, 'work_floor_us') or 0:.3g} µs; "
        f"{t.get('latency_floor')}",
        "peaks: " + "; ".join(str(c) for c in t.get("citations") or []),
    ]
    return Opportunity(
        kind="headroom",
        title=f"{k.short_name}: {saving:.1f} µs/step above its floor (computed from the trace, not measured)",
        saving_us_per_step=saving,
        share_of_step=_share(saving, step),
        formula=formula,
        evidence=evidence,
        kernels=[k.short_name],
        next_command=isolate_command(source, row),
    )


def _headroom(k: WorkloadKernel, step: StepSummary, gpu: str | None) -> Opportunity | None:
    d = k.drill or {}
    if not d.get("ok"):
        return None
    pct = _fnum(d, "pct_of_attainable")
    attainable = _fnum(d, "attainable_us")
    if pct is None or pct <= 0:
        return None
    ratio = min(pct / 100.0, 1.0)
    saving = k.us_per_step * (1.0 - ratio)
    formula = f"{k.us_per_step:.1f} µs/step × (1 − {ratio:.2f} achieved/attainable) = {saving:.1f} µs/step"
    if attainable:
        formula += f"; roof {attainable:.2f} µs vs measured {_fnum(d, 'duration_us') or 0:.2f} µs per launch"
    evidence = [f"bound: {d.get('bound', '?')}"]
    for key, scale, unit in (
        ("achieved_flop_per_s", 1e12, "TFLOP/s"),
        ("achieved_bytes_per_s", 1e12, "TB/s"),
    ):
        v = _fnum(d, key)
        if v is not None:
            evidence.append(f"achieved {v / scale:.3g} {unit}")
    if _fnum(d, "arithmetic_intensity") is not None:
        evidence.append(f"intensity {_fnum(d, 'arithmetic_intensity'):.3g} FLOP/B, {d.get('roof')} roof")
    isa = k.isa or {}
    if isa.get("facts"):
        evidence.append(
            f"registers {isa.get('registers')}, spills {isa.get('spills_bytes')} B, "
            f"shared {isa.get('shared_bytes')} B, "
            f"occupancy {isa.get('occupancy')} (limiter {isa.get('limiter')}; from the {isa.get('facts')})"
        )
    shape = f" --shape '{k.input_shapes}'" if k.input_shapes else ""
    cmd = (
        f"kernelpilot workspace init {_slug(k)} --kernel <source of {k.short_name} or a reproducer> "
        f"--platform '{gpu or '<gpu>'}' --framework <cuda|triton|pytorch>{shape} "
        f"--goal 'cut {k.short_name} from {k.us_per_step:.1f} µs/step toward {k.us_per_step - saving:.1f}'"
    )
    return Opportunity(
        kind="headroom",
        title=f"{k.short_name}: {saving:.1f} µs/step above its roof",
        saving_us_per_step=saving,
        share_of_step=_share(saving, step),
        formula=formula,
        evidence=evidence,
        kernels=[k.short_name],
        next_command=cmd,
    )


def _launch(step: StepSummary) -> Opportunity | None:
    """Launch-bound idle a CUDA/HIP graph removes. The tracer slows the host (every op and launch is
    recorded), so when the capture also timed the steps with CUDA events alone, the idle time without the
    tracer (event step time - busy) caps the estimate; otherwise it is an upper bound, said so."""
    bound = step.launch_bound_gap_us
    if step.wall_us is None or step.idle_us is None or step.busy_us is None or bound is None:
        return None  # without launch calls (rocprofv3, nsys, ncu tables) idle cannot be told from host work
    formula = (
        f"launch-bound idle {bound:.1f} µs/step of {step.idle_us:.1f} µs idle "
        f"(wall {step.wall_us:.1f} − busy {step.busy_us:.1f} under the tracer)"
    )
    saving = bound
    if step.event_step_us is not None:
        untraced = max(step.event_step_us - step.busy_us, 0.0)
        if untraced < bound:
            saving = untraced
            formula += (
                f"; capped by the idle without the tracer: CUDA-event step {step.event_step_us:.1f} − busy "
                f"{step.busy_us:.1f}"
            )
    formula += f" = {saving:.1f} µs/step"
    if saving < MIN_SAVING_US:
        return None
    evidence = [f"{step.launches:g} launches/step", _profiler_bound(step)]
    if step.launch_call_us is not None:
        evidence.append(f"median launch call {step.launch_call_us:.1f} µs on the host (under the tracer)")
    if step.host_wait_us:
        evidence.append(f"host waits {step.host_wait_us:.1f} µs/step in synchronising calls")
    base = step.event_step_us or step.wall_us
    return Opportunity(
        kind="launch_overhead",
        title=f"launch overhead and idle: {saving:.1f} µs/step",
        saving_us_per_step=saving,
        share_of_step=saving / base if base else None,
        formula=formula,
        evidence=evidence,
        kernels=[],
        next_command="playbooks/cuda.md L5: capture the step as a CUDA/HIP graph "
        "(torch.cuda.graphs.CUDAGraph or torch.compile(mode='reduce-overhead')), then "
        "`kernelpilot workload run` again and `kernelpilot workload diff`",
    )


def _profiler_bound(step: StepSummary) -> str:
    """The label of a saving measured under the profiler: an upper bound, with the tracer's cost per launch
    where the step was also timed without it, and how to confirm it without the tracer."""
    confirm = (
        "confirm without the tracer: `kernelpilot workload run STEP.py:make_step` times the step with CUDA "
        "events alone, and `kernelpilot workload diff` before/after the fix measures the saving"
    )
    if step.event_step_us is not None and step.wall_us is not None and step.launches:
        per = (step.wall_us - step.event_step_us) / step.launches
        return (
            f"upper bound: measured under the profiler, which added about {max(per, 0.0):.2f} µs per launch "
            f"(wall {step.wall_us:.1f} under the tracer − {step.event_step_us:.1f} by CUDA events, over "
            f"{step.launches:g} launches); {confirm}"
        )
    return (
        "upper bound: measured under the profiler, whose per-launch recording slows the host (its cost per "
        f"launch cannot be told from a trace alone); {confirm}"
    )


def _chains(trace: Trace, cats: Mapping[str, str]) -> dict[tuple[str, ...], list[list[Activity]]]:
    """Runs of back-to-back small fusable activities per (step, stream), keyed by their names."""
    runs: dict[tuple[str, ...], list[list[Activity]]] = defaultdict(list)
    by_lane: dict[tuple[int, Any], list[Activity]] = defaultdict(list)
    for a in trace.activities:
        stream = a.stream if isinstance(a.stream, int | str) else None  # any JSON a trace gives: hashable
        by_lane[(a.step, stream)].append(a)
    fusable = {name for name, cat in cats.items() if cat in FUSABLE}
    for acts in by_lane.values():
        acts.sort(key=_START)
        cur: list[Activity] = []
        for item in [*acts, None]:
            if item is not None and item.name in fusable and item.dur_us <= SMALL_LAUNCH_US:
                cur.append(item)
                continue
            if len(cur) >= 2:
                runs[tuple(x.name for x in cur)].append(cur)
            cur = []
    return runs


# element sizes of the tensor types PyTorch's profiler prints in "Input type" (record_shapes)
_ELEMENT_BYTES = {
    "float": 4,
    "double": 8,
    "c10::Half": 2,
    "c10::BFloat16": 2,
    "long int": 8,
    "int": 4,
    "short int": 2,
    "signed char": 1,
    "unsigned char": 1,
    "bool": 1,
    "c10::Float8_e4m3fn": 1,
    "c10::Float8_e5m2": 1,
}


def _input_bytes(dims: Any, types: Any) -> int | None:
    """Bytes of the first tensor input of the ATen op that launched a kernel, from its recorded shapes."""
    if not (isinstance(dims, list) and isinstance(types, list) and dims and types):
        return None
    size = _ELEMENT_BYTES.get(types[0]) if isinstance(types[0], str) else None
    if size is None or not isinstance(dims[0], list) or not dims[0]:
        return None
    # a hand-edited or foreign trace may hold any JSON here: only whole sizes a tensor can have count
    if not all(type(d) is int and 0 <= d < _MAX_DIM for d in dims[0]):
        return None
    return size * math.prod(dims[0])


_MAX_DIM = 2**48  # no tensor dimension is larger (and the product of a few stays exact)


def _reread_bytes(
    occ: list[list[Activity]], steps: int, seen: dict[tuple[int, int], int | None]
) -> float | None:
    """Per step: each chain member after the first re-reads what the one before wrote, about the size of
    its op's first input; fusing keeps it on chip (write + read saved, 2x). `seen`: bytes by the identity
    of (dims, types), which the activities keep alive."""
    total = 0
    for run in occ:
        for a in run[1:]:
            key = (id(a.shapes), id(a.input_types))  # readers share one object per distinct shape list
            b = seen.get(key, -1)
            if b == -1:
                b = seen[key] = _input_bytes(a.shapes, a.input_types)
            if b is None:
                return None
            total += 2 * b
    return total / steps


def _fusion(trace: Trace, kernels: list[WorkloadKernel], step: StepSummary) -> list[Opportunity]:
    if not trace.timeline or not trace.activities:
        return []
    cats = {k.name: k.category for k in kernels if not k.rule.startswith("device ")}
    short = {k.name: k.short_name for k in kernels}
    out = []
    seen: dict[tuple[int, int], int | None] = {}
    for names, occ in _chains(trace, cats).items():
        saving = sum(sum(a.dur_us for a in run) - max(a.dur_us for a in run) for run in occ) / trace.steps
        if saving < MIN_SAVING_US:
            continue
        per_step = len(occ) / trace.steps
        chain_us = sum(sum(a.dur_us for a in run) for run in occ) / trace.steps
        mods = {a.module for run in occ for a in run if a.module}
        reread = _reread_bytes(occ, trace.steps, seen)
        out.append(
            Opportunity(
                kind="fusion",
                title=f"fuse {len(names)} back-to-back kernels ({per_step:g}×/step): {saving:.1f} µs/step",
                saving_us_per_step=saving,
                share_of_step=_share(saving, step),
                formula=(
                    f"chain time {chain_us:.1f} µs/step − longest member per occurrence = "
                    f"{saving:.1f} µs/step; "
                    f"launches saved {(len(names) - 1) * per_step:g}/step"
                    + (
                        f"; bytes re-read saved ≈ {reread / 1e6:.2f} MB/step (2 × each member's first input "
                        "after the first: written, then read back)"
                        if reread is not None
                        else ""
                    )
                ),
                evidence=[
                    f"chain: {' → '.join(short.get(n, n) for n in names)}",
                    *([f"inside {sorted(mods)[0]}"] if mods else []),
                ],
                kernels=[short.get(n, n) for n in names],
                next_command="playbooks/cuda.md L5 (fuse small kernels): write the chain as one "
                "Triton/CUDA kernel or "
                "try torch.compile on the module; then `kernelpilot workload diff` before/after",
            )
        )
    return out


def opportunities(
    trace: Trace, step: StepSummary, kernels: list[WorkloadKernel], gpu: str | None
) -> list[Opportunity]:
    from kernelpilot.workload.trace_roofline import place_hot

    place_hot(kernels, gpu)
    found = []
    for row, k in enumerate(kernels, 1):
        if not k.hot:
            continue
        o = _headroom(k, step, gpu) or _trace_headroom(k, row, step, trace.source)
        if o is not None:
            if k.shape_op and trace.format == "kineto":
                o.next_command = isolate_command(trace.source, row)
            found.append(o)
    launch = _launch(step)
    if launch is not None:
        found.append(launch)
    found.extend(_fusion(trace, kernels, step))
    found = [o for o in found if o.saving_us_per_step >= MIN_SAVING_US]
    found.sort(key=lambda o: -o.saving_us_per_step)
    return found
