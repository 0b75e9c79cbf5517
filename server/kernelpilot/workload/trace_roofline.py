"""Each hot kernel row's roofline position from the shapes its trace recorded: computed, not measured.

Why: a trace read (or a run without the drill-down) has no counters, yet `record_shapes` gives the launching
op's input dims and types, from which `workload.op_models` counts FLOPs and compulsory bytes exactly as
`kernelpilot roofline` does. With the wiki's cited peaks that gives a floor per launch; the row's time above
it, in µs/step, ranks beside launch overhead and fusion (`workload.opportunities`).

The latency floor: a kernel this small is bound by its fixed per-launch cost, not by bytes or FLOPs (an
8×2048 RMSNorm's bandwidth floor is a few ns). The floor is max(bytes/bandwidth, FLOPs/peak, latency): the
wiki's measured `measured_min_kernel_us` (`kernelpilot ceilings measure`) when the GPU has one; else the
shortest kernel of this trace stands in for it, said so, never a bandwidth floor of nanoseconds.
"""

from __future__ import annotations

from typing import Any

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.roofline.core import LATENCY_METRIC
from kernelpilot.workload.models import WorkloadKernel

LABEL = "computed from the trace's shapes and the cited specs, not measured"


def _peaks(wiki: Any, gpu_id: str, dtype: str, matrix: bool) -> tuple[Any, Any] | None:
    from kernelpilot.roofline.core import choose_peak_metric, vector_fallback

    try:
        metric, _ = choose_peak_metric(dtype, matrix, False, False)
    except KernelpilotError:
        return None
    packed = vector_fallback(dtype, matrix)
    if packed is not None and wiki.get(gpu_id, packed) is not None:
        metric = packed
    compute, memory = wiki.get(gpu_id, metric), wiki.get(gpu_id, "memory_bandwidth_tb_s")
    return (compute, memory) if compute is not None and memory is not None else None


def _latency(wiki: Any, gpu_id: str, kernels: list[WorkloadKernel]) -> tuple[float | None, str]:
    """(floor µs, where it comes from): the measured wiki line, else the trace's shortest kernel."""
    cv = wiki.get(gpu_id, LATENCY_METRIC)
    if cv is not None and isinstance(cv.value, (int, float)) and cv.unit == "us":
        return float(cv.value), f"latency floor {float(cv.value):.2f} µs measured ({cv.citation()})"
    launches = [k.launch.min_us for k in kernels if not k.rule.startswith("device ") and k.launch.min_us > 0]
    if not launches:
        return None, f"latency floor unmeasured for {gpu_id} (`kernelpilot ceilings measure` records it)"
    low = min(launches)
    return low, (
        f"latency floor unmeasured for {gpu_id} (`kernelpilot ceilings measure` records {LATENCY_METRIC}); "
        f"the shortest kernel of this trace, {low:.2f} µs, stands in for it"
    )


def place(
    k: WorkloadKernel, wiki: Any, gpu_id: str, latency: tuple[float | None, str]
) -> dict[str, Any] | None:
    """The row's position: floor per launch, bound, share of the floor its median launch reaches, the time
    above the floor per step; None when the op has no model, the trace no shapes, the wiki no peak."""
    from kernelpilot.roofline.core import roof_from_peaks
    from kernelpilot.workload.op_models import model_of

    if not (k.shape_op and k.input_shapes and k.input_types):
        return None
    import json

    model = model_of(k.shape_op, json.loads(k.input_shapes), k.input_types)
    peaks = _peaks(wiki, gpu_id, model.dtype, model.matrix) if model is not None else None
    if model is None or peaks is None or k.launch.median_us <= 0:
        return None
    try:
        roof = roof_from_peaks(model.flops, model.bytes, peaks[0], peaks[1])
    except KernelpilotError:
        return None
    work_us = roof.floor_s * 1e6
    lat_us, lat_note = latency
    bound = "compute" if roof.compute_s >= roof.memory_s else "memory"
    floor_us = work_us
    if lat_us is not None and lat_us > work_us:
        floor_us, bound = lat_us, "latency"
    share = min(floor_us / k.launch.median_us, 1.0)
    return {
        "basis": LABEL,
        "op": model.description,
        "formula": model.formula,
        "flops": model.flops,
        "bytes": model.bytes,
        "work_floor_us": work_us,
        "latency_floor_us": lat_us,
        "latency_floor": lat_note,
        "floor_us": floor_us,
        "bound": bound,
        "share_of_floor": share,
        "headroom_us_per_step": k.us_per_step * (1.0 - share),
        "roofline_args": {**model.args, "dtype": model.dtype},
        "citations": [peaks[0].citation(), peaks[1].citation()],
    }


def place_hot(kernels: list[WorkloadKernel], gpu: str | None) -> None:
    """Sets `trace_roofline` on each hot row with recorded shapes: its position, or why there is none."""
    from kernelpilot.wiki.core import load_wiki

    hot = [k for k in kernels if k.hot and k.shape_op]
    if not hot:
        return
    why = "the trace names no GPU" if not gpu else None
    if gpu:
        try:
            wiki = load_wiki()
            gpu_id = wiki.resolve_gpu(gpu)
        except KernelpilotError as exc:
            why = exc.message
    if why is not None:
        for k in hot:
            k.trace_roofline = {"basis": LABEL, "unavailable": why}
        return
    latency = _latency(wiki, gpu_id, kernels)
    for k in hot:
        k.trace_roofline = place(k, wiki, gpu_id, latency) or {
            "basis": LABEL,
            "unavailable": f"no roofline model or cited peak for {k.shape_op} (op_models, the gpu-wiki)",
        }
