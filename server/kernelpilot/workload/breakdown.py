"""Per-step breakdown of a `Trace`: the step's time budget, kernels aggregated per step, groups, hot set.

Definitions (the result's fields say the same): a step's wall time is its period on the GPU timeline (first
activity of step i to first activity of step i+1; the last step ends at its last activity); busy is the
union of device activity in that window; idle = wall - busy. An idle gap is launch-bound when the launch
call of the activity after it started only after the GPU had drained (the host was too slow to keep the
queue full), which a CUDA/HIP graph would remove. Medians over steps; per-kernel times are means over steps
(`per_step_us` keeps each step's figure for diffs).
"""

from __future__ import annotations

import json
import operator
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.workload.categories import categorize
from kernelpilot.workload.errors import NoStepWorkError
from kernelpilot.workload.models import GroupRow, KernelStats, StepSummary, WorkloadKernel
from kernelpilot.workload.readers.trace import Trace


@dataclass
class _Acc:
    kind: str
    name: str = ""
    shape_op: str | None = None  # the ATen op whose input dims split this row from the name's others
    dims: str | None = None  # those dims as compact JSON
    types: Any = None
    durs: list[float] = field(default_factory=list)
    per_step: list[float] = field(default_factory=list)
    first: float = 0.0
    ops: dict[str, float] = field(default_factory=dict)  # values: µs
    top_ops: dict[str, float] = field(default_factory=dict)
    ranges: dict[str, float] = field(default_factory=dict)
    modules: dict[str, float] = field(default_factory=dict)
    phases: dict[str, float] = field(default_factory=dict)
    grid: list[int] | None = None
    block: list[int] | None = None
    graph: bool = False
    launch: dict[str, Any] | None = None


def dims(v: object) -> list[int] | None:
    """Grid/block dims as a trace gave them, when they are a list of numbers."""
    if isinstance(v, list) and v and all(isinstance(x, (int, float)) for x in v):
        return [int(x) for x in v]
    return None


RowKey = tuple[str, str | None, str | None]  # kernel name, launching op, its input dims (compact JSON)


def compact_dims(dims: str | None) -> str:
    """`[[8,1024],[1024,2816],[]]` -> `8x1024,1024x2816` (the tensor inputs only), for a row's name."""
    try:
        parsed = json.loads(dims) if dims else None
    except ValueError:
        return ""
    if not isinstance(parsed, list):
        return ""
    return ",".join("x".join(str(x) for x in d) for d in parsed if isinstance(d, list) and d)


def _top(c: dict[str, float], n: int = 3) -> list[str]:
    return sorted(c, key=lambda k: -c[k])[:n]


_START = operator.attrgetter("start_us")
Combo = tuple[Any, str | None, str | None, str | None, str | None, str | None]  # row, op, top op, range, ...


def _accumulate(trace: Trace) -> tuple[dict[RowKey, _Acc], dict[Combo, list[float]]]:
    """Per row (kernel name, and where `record_shapes` recorded them the launching op's input dims: never
    two shapes under one row): durations, per-step sums; and µs and launches per (name, op, outer op, range,
    module, phase) combination, which the op/range/module/phase tables are summed from (a step's thousands
    of launches fall into a few hundred combinations)."""
    accs: dict[RowKey, _Acc] = {}
    combos: dict[Combo, list[float]] = {}
    steps = trace.steps
    texts: dict[int, str] = {}  # dims text by the identity of the reader's shared dims object
    for a in trace.activities:  # the hot loop of a 100,000-kernel read: each field is read once
        name, dur, step, shapes = a.name, a.dur_us, a.step, a.shapes
        if shapes is None:
            row: RowKey = (name, None, None)
        else:
            text = texts.get(id(shapes))
            if text is None:
                text = texts[id(shapes)] = json.dumps(shapes, separators=(",", ":"))
            row = (name, a.op, text)
        acc = accs.get(row)
        if acc is None:
            acc = accs[row] = _Acc(
                a.kind, name, row[1], row[2], a.input_types, per_step=[0.0] * steps, first=a.start_us,
                grid=dims(a.grid), block=dims(a.block),
            )  # fmt: skip
            if a.args is not None:
                acc.launch = a.args.launch_record()
        acc.durs.append(dur)
        if 0 <= step < steps:
            acc.per_step[step] += dur
        key = (row, a.op, a.top_op, a.range, a.module, a.phase)
        v = combos.get(key)
        if v is None:
            combos[key] = [dur, 1.0]
        else:
            v[0] += dur
            v[1] += 1.0
        if a.graph:
            acc.graph = True
    for (row, op, top, rng, mod, phase), (us, _n) in combos.items():
        acc = accs[row]
        for counter, k in (
            (acc.ops, op),
            (acc.top_ops, top),
            (acc.ranges, rng),
            (acc.modules, mod),
            (acc.phases, phase),
        ):
            if k:
                counter[k] = counter.get(k, 0.0) + us
    if steps == 1:
        for acc in accs.values():
            acc.per_step = [sum(acc.durs)]
    return accs, combos


def _kernels(trace: Trace, accs: dict[RowKey, _Acc]) -> list[WorkloadKernel]:
    from kernelpilot.workload.names import normalize, unique_short_names

    out: list[WorkloadKernel] = []
    steps = trace.steps
    if trace.activities:
        total = sum(sum(a.durs) for a in accs.values())
        for (name, _, _), acc in sorted(accs.items(), key=lambda kv: (-sum(kv[1].durs), kv[1].first)):
            cat, rule = categorize(name, acc.kind)
            s = sum(acc.durs)
            out.append(
                WorkloadKernel(
                    name=name,
                    short_name=name,  # made unique within the result below
                    key=normalize(name),
                    category=cat,
                    rule=rule,
                    launches_per_step=len(acc.durs) / steps,
                    us_per_step=s / steps,
                    share=s / total if total > 0 else 0.0,
                    cumulative_share=0.0,
                    launch=KernelStats(
                        median_us=statistics.median(acc.durs), min_us=min(acc.durs), max_us=max(acc.durs)
                    ),
                    per_step_us=acc.per_step,
                    ops=_top(acc.top_ops) or _top(acc.ops),
                    ranges=_top(acc.ranges),
                    modules=_top(acc.modules),
                    phases=_top(acc.phases),
                    grid=acc.grid,
                    block=acc.block,
                    input_shapes=acc.dims,
                    shape_op=acc.shape_op,
                    input_types=[str(t) for t in acc.types] if isinstance(acc.types, list) else None,
                    graph_launched=acc.graph,
                    launch_record=acc.launch or None,
                )
            )
    else:
        total = sum(g.total_us for g in trace.aggregates)
        for g in sorted(trace.aggregates, key=lambda g: -g.total_us):
            cat, rule = categorize(g.name)
            out.append(
                WorkloadKernel(
                    name=g.name,
                    short_name=g.name,
                    key=normalize(g.name),
                    category=cat,
                    rule=rule,
                    launches_per_step=g.calls / steps,
                    us_per_step=g.total_us / steps,
                    share=g.total_us / total if total > 0 else 0.0,
                    cumulative_share=0.0,
                    launch=KernelStats(
                        median_us=g.median_us if g.median_us is not None else g.total_us / max(g.calls, 1),
                        min_us=g.min_us,
                        max_us=g.max_us,
                    ),
                )
            )
    _name_rows(out, unique_short_names)
    cum = 0.0
    for k in out:
        cum += k.share
        k.cumulative_share = min(cum, 1.0)
    return out


def _name_rows(out: list[WorkloadKernel], unique: Any) -> None:
    """Short names unique per kernel name; a name split over several shapes gets each row's shapes in its
    short name and key (`name @8x1024,1024x2816`), so diff and the opportunities tell the rows apart."""
    names = list(dict.fromkeys(k.name for k in out))
    short = dict(zip(names, unique(names, 60), strict=True))
    rows: dict[str, int] = {}
    for k in out:
        rows[k.name] = rows.get(k.name, 0) + 1
    tags: dict[str, list[str]] = {}
    for k in out:
        k.short_name = short[k.name]
        if rows[k.name] > 1:
            tag = compact_dims(k.input_shapes) or "no shapes"
            seen = tags.setdefault(k.name, [])
            if tag in seen:  # the same dims under another op (or none recorded): the op tells them apart
                tag = f"{(k.shape_op or 'no op').removeprefix('aten::')} {tag}"
            if tag in seen:
                tag = f"{tag} #{len(seen) + 1}"
            seen.append(tag)
            k.short_name = f"{k.short_name} @{tag}"
            k.key = f"{k.key} @{tag}"


def _steps(trace: Trace, kernel_us: float, launches: float) -> StepSummary:
    """The step's time budget from the step windows and idle causes of workload/idle.py (medians over the
    steps it counts; the causes are means, so they sum to the mean idle)."""
    from kernelpilot.workload.idle import idle_causes, stream_launches, windows

    n = trace.steps
    if not trace.timeline or not trace.activities:
        return StepSummary(
            steps=n, wall_us=None, busy_us=None, idle_us=None, kernel_us=kernel_us, launches=launches
        )
    ordered = sorted(trace.activities, key=_START)
    sw = windows(trace, ordered)
    has_calls = any(a.launch_ts_us is not None for a in ordered)
    calls = [a.launch_dur_us for a in ordered if a.launch_dur_us is not None and not a.graph]
    if not trace.step_host:
        trace.notes.append(
            "wall time is the trace's span / steps (no step ranges): it includes whatever ran between the "
            "kernels, host work outside a region too; shares of the step use kernel time instead"
        )
    return StepSummary(
        steps=n,
        marked=bool(trace.step_host),
        wall_us=statistics.median(sw.walls),
        busy_us=statistics.median(sw.busys),
        idle_us=statistics.median(sw.idles),
        kernel_us=kernel_us,
        launches=launches,
        launch_bound_gap_us=statistics.median(sw.causes["launch_bound"]) if has_calls else None,
        host_wait_us=statistics.median(trace.host_sync_us) if trace.host_sync_us else None,
        launch_call_us=statistics.median(calls) if calls else None,
        per_step_wall_us=sw.walls,
        per_step_busy_us=sw.busys,
        per_step_idle_us=sw.idles,
        idle_steps=sw.counted,
        idle_causes=idle_causes(sw) if has_calls else [],
        top_gaps=sw.gaps if has_calls else [],
        streams=stream_launches(ordered),
    )


def _group_keys(
    trace: Trace, kernels: list[WorkloadKernel], combos: dict[Combo, list[float]]
) -> list[tuple[str, float, float, dict[str, str | None]]]:
    """(name, µs, launches, level -> key) per combination; per kernel name for formats of aggregates only."""
    cat = {k.name: k.category for k in kernels}
    if trace.activities:
        return [
            (
                name,
                us,
                n,
                {"category": cat[name], "op": top or op, "range": rng, "module": mod, "phase": phase},
            )
            for ((name, _, _), op, top, rng, mod, phase), (us, n) in combos.items()
        ]
    n = trace.steps
    return [(k.name, k.us_per_step * n, k.launches_per_step * n, {"category": k.category}) for k in kernels]


def _groups(trace: Trace, kernels: list[WorkloadKernel], combos: dict[Combo, list[float]]) -> list[GroupRow]:
    """Time per step by category, ATen op, range, nn.Module path and phase, summed over the launches under
    each key (a kernel launched from two modules counts in both, for the launches of each)."""
    steps = trace.steps
    total = sum(k.us_per_step for k in kernels) or 1.0
    agg: dict[tuple[str, str], list[float]] = {}
    names: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name, us, launches, keys in _group_keys(trace, kernels, combos):
        for level, key in keys.items():
            if key:
                v = agg.setdefault((level, key), [0.0, 0.0])
                v[0] += us
                v[1] += launches
                names[(level, key)].add(name)
    rows = [
        GroupRow(
            level=level,
            key=key,
            us_per_step=us / steps,
            share=us / steps / total,
            launches_per_step=n / steps,
            kernels=len(names[(level, key)]),
        )
        for (level, key), (us, n) in agg.items()
    ]
    order = {"category": 0, "op": 1, "range": 2, "module": 3, "phase": 4}
    rows.sort(key=lambda r: (order[r.level], -r.us_per_step))
    return rows


def mark_hot(kernels: list[WorkloadKernel], share: float, cap: int) -> list[WorkloadKernel]:
    """The hot set: largest first until `share` of kernel time is covered, at most `cap` kernels."""
    hot: list[WorkloadKernel] = []
    for k in kernels:
        if len(hot) >= cap or (hot and hot[-1].cumulative_share >= share):
            break
        k.hot = True
        hot.append(k)
    return hot


def _forward(trace: Trace) -> None:
    """Name the forward pass where the trace marks a backward one: in a step with backward launches, an
    unmarked launch before the step's first backward launch is forward (the trace's ranges name backward
    and optimizer; the forward has no range of its own in a plain training step)."""
    first_bwd: dict[int, float] = {}
    for a in trace.activities:
        if a.phase == "backward" and a.launch_ts_us is not None:
            t = first_bwd.get(a.step)
            if t is None or a.launch_ts_us < t:
                first_bwd[a.step] = a.launch_ts_us
    if not first_bwd:
        return
    for a in trace.activities:
        t = first_bwd.get(a.step)
        if a.phase is None and t is not None and a.launch_ts_us is not None and a.launch_ts_us < t:
            a.phase = "forward"


def breakdown(trace: Trace) -> tuple[StepSummary, list[WorkloadKernel], list[GroupRow]]:
    _forward(trace)
    accs, combos = _accumulate(trace) if trace.activities else ({}, {})
    kernels = _kernels(trace, accs)
    if not kernels:
        raise NoStepWorkError(
            f"{trace.source}: the captured steps ran no kernel, copy or fill on the GPU",
            "check that the step launches GPU work (inputs on the device) and that the region was entered",
        )
    kernel_us = sum(k.us_per_step for k in kernels)
    launches = sum(k.launches_per_step for k in kernels)
    return _steps(trace, kernel_us, launches), kernels, _groups(trace, kernels, combos)
