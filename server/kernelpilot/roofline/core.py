"""Roofline analysis from cited peaks: intensity, ridge point, bound, time floor, targets, charts.

Owns the choice of the peak that applies and the arithmetic on top of it. It takes peaks only as
`CitedValue`s (wiki datasheet lines or `## Measured` lines); a bare float is refused (BareNumberError),
a missing metric is `UNKNOWN (gpu-wiki not found)` (UnknownSpecError naming the metric).

Peak choice (`choose_peak_metric`):
- matrix ops (gemm, bmm, attention; or `unit=tensor`): the tensor/matrix peak of the input dtype:
  fp64 -> fp64_matrix_tflops, fp32 -> fp32_vector_tflops (fp32 matmul without TF32 runs on the FP32
  units) or tf32_dense_tflops with allow_tf32, tf32 -> tf32_dense_tflops, fp16/bf16/fp8/fp6/fp4 ->
  <dtype>_dense_tflops, int8 -> int8_dense_tops; `sparse` picks the *_sparse_* key.
- vector ops (elementwise, reductions, softmax, norms; or `unit=vector`): fp64 -> fp64_vector_tflops;
  fp16/bf16 -> fp16_vector_tflops / bf16_vector_tflops when the wiki has that line, else
  fp32_vector_tflops; anything else -> fp32_vector_tflops.
- memory: memory_bandwidth_tb_s.
With `basis=measured`: measured_copy_bandwidth_tb_s and measured_<dtype>_matmul_tflops (tensor ops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import InvalidArgumentError, UnknownSpecError
from kernelpilot.roofline import ops, stop
from kernelpilot.roofline.models import (
    Achieved,
    Bound,
    CeilingComparison,
    IssueFloor,
    RooflineRequest,
    RooflineResult,
)
from kernelpilot.wiki.core import Wiki, load_wiki
from kernelpilot.wiki.errors import BareNumberError, UnitMismatchError
from kernelpilot.wiki.models import UNKNOWN_TEXT, CitedValue

_COMPUTE_UNITS = {"TFLOP/s": 1e12, "TOP/s": 1e12}
_MEMORY_UNITS = {"TB/s": 1e12, "GB/s": 1e9}
_MATRIX_OPS = ("gemm", "bmm", "attention")


def choose_peak_metric(dtype: str, matrix: bool, allow_tf32: bool, sparse: bool) -> tuple[str, str]:
    """(metric key, reason) of the compute peak that applies; see the module docstring."""
    if not matrix:
        if sparse:
            raise InvalidArgumentError(
                "--sparse applies to tensor-core ops only", "drop --sparse or use --unit tensor"
            )
        if dtype == "fp64":
            return "fp64_vector_tflops", "fp64 on the vector (non-tensor) units"
        return "fp32_vector_tflops", f"{dtype} vector op computed on the FP32 vector units"
    kind = "sparse" if sparse else "dense"
    if dtype == "fp64":
        if sparse:
            raise InvalidArgumentError("no sparse fp64 tensor peak", "drop --sparse")
        return "fp64_matrix_tflops", "fp64 matrix op on the FP64 tensor/matrix units"
    if dtype == "fp32" and not allow_tf32:
        if sparse:
            raise InvalidArgumentError(
                "fp32 without TF32 has no sparse peak", "add --allow-tf32 or drop --sparse"
            )
        return (
            "fp32_vector_tflops",
            "fp32 matrix op without TF32 runs on the FP32 units (pass --allow-tf32 for TF32)",
        )
    if dtype in ("fp32", "tf32"):
        return f"tf32_{kind}_tflops", f"fp32 matrix op on TF32 tensor cores ({kind})"
    if dtype == "int8":
        return f"int8_{kind}_tops", f"int8 matrix op on tensor/matrix cores ({kind})"
    if dtype == "int32":
        raise InvalidArgumentError(
            "int32 is not a tensor-core input type", "use int8 inputs or --unit vector"
        )
    return f"{dtype}_{kind}_tflops", f"{dtype} matrix op on tensor/matrix cores ({kind})"


def vector_fallback(dtype: str, matrix: bool) -> str | None:
    """Packed 16-bit vector peak (fp16_vector_tflops / bf16_vector_tflops), preferred when the wiki has it."""
    if not matrix and dtype in ("fp16", "bf16"):
        return f"{dtype}_vector_tflops"
    return None


def measured_compute_metric(dtype: str, allow_tf32: bool) -> str:
    if dtype == "fp32" and allow_tf32:
        return "measured_tf32_matmul_tflops"
    return f"measured_{dtype}_matmul_tflops"


def _require(wiki: Wiki, gpu_id: str, metric: str, why: str) -> CitedValue:
    cv = wiki.get(gpu_id, metric)
    if cv is None:
        if metric in wiki.gpus[gpu_id].conflicts:
            wiki.lookup(gpu_id, metric)  # raises WikiConflictError with both citations
        raise UnknownSpecError(
            f"{UNKNOWN_TEXT}: {metric} for {gpu_id} (needed for {why}); roofline refuses to guess it",
            f"add a cited line `- {metric}: <value> <unit> | source: ...` to a user wiki (--wiki DIR)"
            + (" or run `kernelpilot ceilings measure`" if metric.startswith("measured_") else ""),
        )
    return cv


def _scaled(peak: object, allowed: dict[str, float], what: str) -> float:
    """Peak in base units per second; only CitedValues are accepted."""
    if not isinstance(peak, CitedValue):
        raise BareNumberError(
            f"{what} peak must be a cited wiki value (CitedValue), got {type(peak).__name__} {peak!r}",
            "look it up with Wiki.lookup / `kernelpilot spec`; bare numbers are refused",
        )
    if peak.unit not in allowed:
        raise UnitMismatchError(
            f"{what} peak {peak.citation()} has unit {peak.unit!r}; expected one of {', '.join(allowed)}",
            "cite a metric of the right kind",
        )
    v = peak.number()
    if not v > 0:
        raise UnitMismatchError(f"{what} peak {peak.citation()} is not positive", "fix the wiki line")
    return v * allowed[peak.unit]


@dataclass
class Roof:
    flops: float
    bytes: float
    compute_per_s: float
    memory_per_s: float

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes if self.bytes > 0 else math.inf

    @property
    def ridge(self) -> float:
        return self.compute_per_s / self.memory_per_s

    @property
    def compute_s(self) -> float:
        return self.flops / self.compute_per_s

    @property
    def memory_s(self) -> float:
        return self.bytes / self.memory_per_s

    @property
    def floor_s(self) -> float:
        return max(self.compute_s, self.memory_s)

    def attainable(self, intensity: float) -> float:
        return min(self.compute_per_s, self.memory_per_s * intensity)


def roof_from_peaks(flops: float, nbytes: float, compute_peak: object, memory_peak: object) -> Roof:
    """The roofline of a kernel from two cited peaks (TFLOP/s|TOP/s and TB/s|GB/s); floats are refused."""
    c = _scaled(compute_peak, _COMPUTE_UNITS, "compute")
    m = _scaled(memory_peak, _MEMORY_UNITS, "memory bandwidth")
    if flops < 0 or nbytes < 0 or (flops == 0 and nbytes == 0):
        raise InvalidArgumentError("FLOPs and bytes must be >= 0 and not both 0", "check the op description")
    return Roof(flops, nbytes, c, m)


def _count(req: RooflineRequest) -> tuple[ops.OpCount, str, str]:
    dtype = ops.canonical_dtype(req.dtype)
    out = ops.canonical_dtype(req.out_dtype, "out_dtype") if req.out_dtype else dtype
    s, so = ops.DTYPE_BYTES[dtype], ops.DTYPE_BYTES[out]
    if req.op is None:
        with_isa = req.isa is not None or req.ncu_csv is not None
        flops = req.flops if req.flops is not None else (0.0 if with_isa else None)
        if flops is None or req.bytes_moved is None:
            raise InvalidArgumentError(
                "give --op with its shape, or both --flops and --bytes-moved (or --bytes-moved with --isa)",
                "e.g. --op gemm --m 4096 --n 4096 --k 4096, or --isa k.cubin --grid 512 --block 128 "
                "--bytes-moved 2e7 for an op the catalogue lacks",
            )
        if flops < 0 or req.bytes_moved <= 0:
            raise InvalidArgumentError(
                "--flops must be >= 0 and --bytes-moved > 0", "give measured or counted totals"
            )
        what = "given FLOPs/bytes" + (" with the kernel's instruction counts" if with_isa else "")
        count = ops.OpCount(flops, req.bytes_moved, req.unit == "tensor", what, "given directly")
        return count, dtype, out
    if req.op in ("gemm", "bmm"):
        if req.op == "bmm" and req.batch is None:
            raise InvalidArgumentError("--batch is required for bmm", "give --batch")
        count = ops.gemm(req.m, req.n, req.k, req.batch, s, so, req.accumulate)
    elif req.op == "elementwise":
        count = ops.elementwise(req.numel, req.inputs, req.outputs, req.flops_per_element, s, so)
    elif req.op == "topk":
        count = ops.topk(req.rows, req.cols, req.k, s, so)
    elif req.op == "attention":
        count = ops.attention(
            req.batch, req.heads, req.kv_heads, req.seq_q, req.seq_k, req.head_dim, req.causal, s, so
        )
    else:
        count = ops.row_op(req.op, req.rows, req.cols, req.numel, s, so)
    return count, dtype, out


def _fmt_time(us: float) -> str:
    return f"{us:.4g} µs" if us < 1e4 else f"{us / 1e3:.4g} ms"


def _validate(req: RooflineRequest) -> None:
    if not 0 < req.target_fraction <= 1:
        raise InvalidArgumentError(
            f"--target-fraction must be in (0, 1], got {req.target_fraction}",
            "e.g. 0.9 for 90% of the roofline",
        )
    for name in ("measured_time_us", "measured_bytes", "measured_flops"):
        v = getattr(req, name)
        if v is not None and not v > 0:
            raise InvalidArgumentError(
                f"--{name.replace('_', '-')} must be > 0, got {v}", "give a measured value"
            )


@dataclass(frozen=True)
class _Peaks:
    """The roofs used (spec or measured basis) and the spec peaks the comparisons start from."""

    compute: CitedValue
    memory: CitedValue
    spec_compute: CitedValue
    spec_memory: CitedValue
    choice: str


def _peaks(req: RooflineRequest, wiki: Wiki, gpu_id: str, dtype: str, matrix: bool) -> _Peaks:
    spec_metric, reason = choose_peak_metric(dtype, matrix, req.allow_tf32, req.sparse)
    packed = vector_fallback(dtype, matrix)
    if packed is not None and wiki.get(gpu_id, packed) is not None:
        spec_metric, reason = packed, f"{dtype} vector op on the packed {dtype} vector units"
    spec_compute = _require(wiki, gpu_id, spec_metric, f"the {dtype} {'tensor' if matrix else 'vector'} peak")
    spec_memory = _require(wiki, gpu_id, "memory_bandwidth_tb_s", "the memory roof")
    if req.basis != "measured":
        choice = f"{reason} -> {spec_compute.metric}; memory roof -> {spec_memory.metric}"
        return _Peaks(spec_compute, spec_memory, spec_compute, spec_memory, choice)
    memory = _require(wiki, gpu_id, "measured_copy_bandwidth_tb_s", "measured basis")
    compute = wiki.get(gpu_id, measured_compute_metric(dtype, req.allow_tf32)) if matrix else None
    if compute is None:
        choice = (
            f"{reason}; measured ceiling: {memory.metric}; compute roof {spec_compute.metric} is the spec "
            "(no measured ceiling for it in the wiki)"
        )
        return _Peaks(spec_compute, memory, spec_compute, spec_memory, choice)
    choice = f"{reason}; measured ceilings: {compute.metric}, {memory.metric}"
    return _Peaks(compute, memory, spec_compute, spec_memory, choice)


def _attainable(
    wiki: Wiki, gpu_id: str, dtype: str, allow_tf32: bool, peaks: _Peaks, matrix: bool
) -> tuple[tuple[stop.Ceiling, stop.Ceiling | None], tuple[stop.Ceiling, stop.Ceiling | None]]:
    """(compute, memory) roofs of the stop verdict: (measured ceiling when the wiki has one, spec)."""
    spec_c, spec_m = stop.from_cited(peaks.spec_compute), stop.from_cited(peaks.spec_memory)
    mem = wiki.get(gpu_id, "measured_copy_bandwidth_tb_s")
    comp = wiki.get(gpu_id, measured_compute_metric(dtype, allow_tf32)) if matrix else None
    memory = (
        (stop.from_cited(mem), spec_m) if mem is not None and mem.unit in _MEMORY_UNITS else (spec_m, None)
    )
    compute = (
        (stop.from_cited(comp), spec_c) if comp is not None and comp.unit == spec_c.unit else (spec_c, None)
    )
    return compute, memory


def _stop_conditions(req: RooflineRequest, verdict: stop.StopVerdict) -> list[str]:
    """Stop Conditions from the one stop verdict: the attainable target first, the spec target beside."""
    f = verdict.target_fraction
    c = verdict.ceiling
    kind = "measured" if c.measured else "spec"
    rate = "bandwidth" if verdict.bound == "memory" else "throughput"
    stops = [
        f"kernel time ≤ {_fmt_time(verdict.target_time_us)} ({f:.0%} of the {kind} {verdict.bound} roof; "
        f"floor {_fmt_time(verdict.target_time_us * f)} = work / {c.citation})",
        f"achieved {rate} ≥ {f * c.value:.4g} {c.unit} ({f:.0%} of the {kind} ceiling {c.citation})",
    ]
    sc = verdict.spec_ceiling
    if sc is not None and verdict.spec_target_time_us is not None:
        stops.append(
            f"spec target, shown beside and not used: time ≤ {_fmt_time(verdict.spec_target_time_us)} "
            f"= {f * sc.value:.4g} {sc.unit} ({f:.0%} of {sc.citation})"
        )
    if req.measured_time_us is not None:
        stops.append(verdict.text)
    return stops


def _achieved(req: RooflineRequest, count: ops.OpCount, roof: Roof, floor_us: float) -> Achieved | None:
    """The measured run against the roof of the chosen basis; no percentage when it is under the floor."""
    if req.measured_time_us is None:
        return None
    t = req.measured_time_us * 1e-6
    fl = req.measured_flops if req.measured_flops is not None else count.flops
    by = req.measured_bytes if req.measured_bytes is not None else count.bytes
    possible = req.measured_time_us >= floor_us
    return Achieved(
        time_us=req.measured_time_us,
        tflops=fl / t / 1e12,
        tb_s=by / t / 1e12,
        pct_of_compute_peak=100 * fl / t / roof.compute_per_s if possible else None,
        pct_of_memory_peak=100 * by / t / roof.memory_per_s if possible else None,
        pct_of_roofline=100 * floor_us * 1e-6 / t if possible else None,
    )


def _basis_check(req: RooflineRequest, peaks: _Peaks, bound: str) -> None:
    """basis=measured works whenever the binding roof has a measured ceiling; refuses otherwise."""
    if req.basis != "measured":
        return
    roof = peaks.compute if bound == "compute" else peaks.memory
    if not roof.measured:
        raise InvalidArgumentError(
            f"basis=measured: the binding {bound} roof ({roof.metric}) has no measured ceiling in the wiki",
            "use --basis spec, or add the measured line with `kernelpilot ceilings measure --out ...` "
            "and pass its folder with --wiki",
        )


def analyze(req: RooflineRequest, wiki: Wiki | None = None) -> RooflineResult:
    """Roofline of one kernel on one GPU from cited peaks; see the module docstring."""
    from kernelpilot.roofline.issue import issue_floors

    _validate(req)
    count, dtype, _out = _count(req)
    matrix = count.matrix if req.unit == "auto" else req.unit == "tensor"
    if wiki is None:
        wiki = load_wiki([Path(d) for d in req.wiki])
    gpu_id = wiki.resolve_gpu(req.gpu)
    peaks = _peaks(req, wiki, gpu_id, dtype, matrix)
    compute, memory = peaks.compute, peaks.memory
    roof = roof_from_peaks(count.flops, count.bytes, compute, memory)
    bound: Bound = "compute" if roof.intensity >= roof.ridge else "memory"
    _basis_check(req, peaks, bound)
    floors, issue_roof = issue_floors(req, wiki, gpu_id)
    issue_us = floors[-1].time_us if floors else None
    if issue_us is not None and issue_us > roof.floor_s * 1e6:
        bound = "issue"
    floor_us = max(roof.floor_s * 1e6, issue_us or 0.0)
    compute_roofs, memory_roofs = _attainable(wiki, gpu_id, dtype, req.allow_tf32, peaks, matrix)
    fl = req.measured_flops if req.measured_flops is not None else count.flops
    by = req.measured_bytes if req.measured_bytes is not None else count.bytes
    given = req.measured_flops is not None or req.measured_bytes is not None
    basis = (
        "--measured-bytes/--measured-flops" if given else "the op's counted work"
    ) + " / --measured-time-us"
    verdict = stop.binding(
        fl, by, compute_roofs, memory_roofs, req.measured_time_us, req.target_fraction, issue_roof, basis
    )
    achieved = _achieved(req, count, roof, floor_us)
    below = (
        stop.below_floor(req.measured_time_us, floor_us, bound, "--measured-time-us")
        if req.measured_time_us is not None
        else None
    )
    comparisons = _comparisons(
        wiki, gpu_id, dtype, req.allow_tf32, peaks.spec_compute if matrix else None, peaks.spec_memory
    )
    achieved_flops = achieved.tflops * 1e12 if achieved else None
    svg = render_svg(roof, achieved_flops, gpu_id, count.description, compute, memory)
    return RooflineResult(
        gpu_id=gpu_id,
        op=f"{count.description} ({dtype})",
        formula=count.formula,
        flops=count.flops,
        bytes=count.bytes,
        arithmetic_intensity=roof.intensity,
        compute_peak=compute,
        memory_peak=memory,
        peak_choice=peaks.choice,
        basis=req.basis,
        ridge_point=roof.ridge,
        bound=bound,
        compute_time_us=roof.compute_s * 1e6,
        memory_time_us=roof.memory_s * 1e6,
        issue_time_us=issue_us,
        issue=floors,
        time_floor_us=floor_us,
        below_floor=below,
        target_fraction=req.target_fraction,
        target_time_us=verdict.target_time_us,
        stop_conditions=_stop_conditions(req, verdict),
        stop=verdict,
        comparisons=comparisons,
        achieved=achieved,
        citations=_citations(compute, memory, comparisons, floors),
        notes=[n for n in [wiki.name_note(req.gpu, gpu_id), latency_note(wiki, gpu_id, floor_us)] if n]
        + _notes(matrix, count, floors),
        ascii_chart=render_ascii(roof, achieved_flops, bound),
        svg=svg,
        svg_path=_write_atomic(Path(req.svg), svg) if req.svg else None,
    )


def _citations(
    compute: CitedValue, memory: CitedValue, comparisons: list[CeilingComparison], floors: list[IssueFloor]
) -> list[str]:
    citations = [compute.citation(), memory.citation()]
    for c in comparisons:
        for cv in (c.spec, c.measured):
            if cv.citation() not in citations:
                citations.append(cv.citation())
    for fl in floors:
        citations.extend(c for c in fl.citations if c not in citations)
    return citations


LATENCY_METRIC = "measured_min_kernel_us"  # the smallest kernel's per-launch time (`ceilings measure`)


def latency_note(wiki: Wiki, gpu_id: str, floor_us: float) -> str | None:
    """A floor below the launch cost is no target (issue 44: a fused 8x2048 RMSNorm's bandwidth floor is a few
    ns): with the GPU's measured latency floor, say when it binds; without one, say a sub-µs floor is
    unmeasured against it rather than leave nanoseconds standing as the target."""
    cv = wiki.get(gpu_id, LATENCY_METRIC)
    if cv is not None and isinstance(cv.value, (int, float)):
        if floor_us >= cv.value:
            return None
        return (
            f"latency floor {cv.value:g} µs per launch ({cv.citation()}) is above the work floor "
            f"{floor_us:.4g} µs: no kernel of a stream runs faster than one launch; {cv.value:g} µs is the "
            "reachable floor"
        )
    if floor_us >= 1.0:
        return None
    return (
        f"latency floor unmeasured for {gpu_id}: the work floor {floor_us * 1e3:.3g} ns is under a "
        "microsecond and may be under a launch's fixed cost, so it is no target by itself; `kernelpilot "
        f"ceilings measure` records {LATENCY_METRIC} (the smallest kernel's per-launch time)"
    )


def _notes(matrix: bool, count: ops.OpCount, floors: list[IssueFloor]) -> list[str]:
    notes: list[str] = []
    if matrix and count.description.startswith("attention"):
        notes.append("attention softmax FLOPs (~5 per score) run on the vector units and are not counted")
    if len(floors) == 2:
        a, b = floors
        ratio = a.time_us / b.time_us if b.time_us > 0 else math.inf
        notes.append(
            f"issue floor: static {a.time_us:.4g} µs vs measured {b.time_us:.4g} µs (static/measured "
            f"{ratio:.2f}); the stop verdict uses the measured one"
        )
    if count.flops == 0 and not floors:
        notes.append(
            "no FLOPs counted: the compute roof is empty; give --isa (code object, grid, block) or --ncu-csv "
            "for the instruction-issue floor, which bounds selection and shuffle-heavy kernels"
        )
    return notes


def run_roofline(req: RooflineRequest) -> RooflineResult:
    """Capability entry point."""
    return analyze(req)


def _comparisons(
    wiki: Wiki,
    gpu_id: str,
    dtype: str,
    allow_tf32: bool,
    spec_compute: CitedValue | None,
    spec_memory: CitedValue,
) -> list[CeilingComparison]:
    out: list[CeilingComparison] = []
    for mkey in ("measured_copy_bandwidth_tb_s", "measured_read_bandwidth_tb_s"):
        mv = wiki.get(gpu_id, mkey)
        if mv is not None and mv.unit in _MEMORY_UNITS and spec_memory.unit in _MEMORY_UNITS:
            ratio = (
                mv.number()
                * _MEMORY_UNITS[mv.unit]
                / (spec_memory.number() * _MEMORY_UNITS[spec_memory.unit])
            )
            out.append(
                CeilingComparison(resource="memory bandwidth", spec=spec_memory, measured=mv, ratio=ratio)
            )
    if spec_compute is not None:
        mv = wiki.get(gpu_id, measured_compute_metric(dtype, allow_tf32))
        if mv is not None and mv.unit == spec_compute.unit:
            out.append(
                CeilingComparison(
                    resource=f"{dtype} matmul",
                    spec=spec_compute,
                    measured=mv,
                    ratio=mv.number() / spec_compute.number(),
                )
            )
    return out


def _write_atomic(path: Path, text: str) -> str:
    write_text_atomic(path, text, arg="--svg")  # the output-path policy: foundation.atomic
    return str(path.expanduser())


# ----------------------------------------------------------------------------------------------- charts


def _axes(roof: Roof) -> tuple[float, float, float, float]:
    lo = min(roof.intensity, roof.ridge)
    hi = max(roof.intensity, roof.ridge)
    xmin = 10 ** math.floor(math.log10(max(lo, 1e-6)) - 0.5)
    xmax = 10 ** math.ceil(math.log10(max(hi, 1e-6)) + 0.5)
    ymax = roof.compute_per_s * 2
    ymin = min(roof.attainable(xmin), roof.compute_per_s) / 2
    return xmin, xmax, ymin, ymax


def render_ascii(
    roof: Roof, achieved_per_s: float | None, bound: str, width: int = 64, height: int = 16
) -> str:
    """Log-log roofline: '_' compute roof, '/' memory roof, '+' ridge, 'X' kernel bound, 'o' achieved."""
    xmin, xmax, ymin, ymax = _axes(roof)
    lx0, lx1, ly0, ly1 = math.log10(xmin), math.log10(xmax), math.log10(ymin), math.log10(ymax)
    grid = [[" "] * width for _ in range(height)]

    def col(x: float) -> int:
        return min(width - 1, max(0, round((math.log10(x) - lx0) / (lx1 - lx0) * (width - 1))))

    def row(y: float) -> int:
        return min(height - 1, max(0, round((ly1 - math.log10(max(y, ymin))) / (ly1 - ly0) * (height - 1))))

    for c in range(width):
        x = 10 ** (lx0 + (lx1 - lx0) * c / (width - 1))
        y = roof.attainable(x)
        grid[row(y)][c] = "_" if y >= roof.compute_per_s else "/"
    grid[row(roof.compute_per_s)][col(roof.ridge)] = "+"
    ai = min(max(roof.intensity, xmin), xmax)
    grid[row(roof.attainable(ai))][col(ai)] = "X"
    if achieved_per_s is not None:
        grid[row(achieved_per_s)][col(ai)] = "o"
    top = f"{ymax / 1e12:.3g} TFLOP/s"
    lines = [f"attainable FLOP/s (log)  top={top}"]
    lines += ["|" + "".join(r) for r in grid]
    lines.append("+" + "-" * width)
    lines.append(f" {xmin:.3g}{' ' * (width - 22)}{xmax:.3g}  FLOP/byte (log)")
    lines.append(
        f" X = this kernel (AI {roof.intensity:.4g}, {bound}-bound), + = ridge {roof.ridge:.4g} FLOP/B"
        + (", o = achieved" if achieved_per_s is not None else "")
    )
    return "\n".join(lines)


def _esc(s: str) -> str:
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_svg(
    roof: Roof,
    achieved_per_s: float | None,
    gpu_id: str,
    op: str,
    compute: CitedValue,
    memory: CitedValue,
    w: int = 720,
    h: int = 460,
) -> str:
    """Standalone SVG roofline (log-log) with decade grid, roofs, ridge, kernel point and citations."""
    xmin, xmax, ymin, ymax = _axes(roof)
    left, right, top, bottom = 70, 20, 40, 110
    pw, ph = w - left - right, h - top - bottom
    lx0, lx1, ly0, ly1 = math.log10(xmin), math.log10(xmax), math.log10(ymin), math.log10(ymax)

    def X(x: float) -> float:
        return left + (math.log10(x) - lx0) / (lx1 - lx0) * pw

    def Y(y: float) -> float:
        return top + (ly1 - math.log10(max(y, ymin))) / (ly1 - ly0) * ph

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<text x="{left}" y="20" font-size="14">{_esc(f"Roofline: {op} on {gpu_id}")}</text>',
    ]
    for d in range(math.floor(lx0), math.ceil(lx1) + 1):
        x = 10.0**d
        if xmin <= x <= xmax:
            parts.append(f'<line x1="{X(x):.1f}" y1="{top}" x2="{X(x):.1f}" y2="{top + ph}" stroke="#ddd"/>')
            parts.append(f'<text x="{X(x):.1f}" y="{top + ph + 14}" text-anchor="middle">{x:g}</text>')
    for d in range(math.floor(ly0), math.ceil(ly1) + 1):
        y = 10.0**d
        if ymin <= y <= ymax:
            parts.append(
                f'<line x1="{left}" y1="{Y(y):.1f}" x2="{left + pw}" y2="{Y(y):.1f}" stroke="#ddd"/>'
            )
            parts.append(f'<text x="{left - 4}" y="{Y(y) + 4:.1f}" text-anchor="end">{y / 1e12:g}</text>')
    parts.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#333"/>')
    pts = [(xmin, roof.attainable(xmin)), (roof.ridge, roof.compute_per_s), (xmax, roof.compute_per_s)]
    poly = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts)
    parts.append(f'<polyline points="{poly}" fill="none" stroke="#1f5fbf" stroke-width="2.5"/>')
    parts.append(
        f'<circle cx="{X(roof.ridge):.1f}" cy="{Y(roof.compute_per_s):.1f}" r="4" fill="#1f5fbf"/>'
        f'<text x="{X(roof.ridge) + 6:.1f}" y="{Y(roof.compute_per_s) - 6:.1f}">'
        f"ridge {roof.ridge:.4g} FLOP/B</text>"
    )
    ai = min(max(roof.intensity, xmin), xmax)
    parts.append(
        f'<circle cx="{X(ai):.1f}" cy="{Y(roof.attainable(ai)):.1f}" r="5" fill="#d62728"/>'
        f'<text x="{X(ai) + 7:.1f}" y="{Y(roof.attainable(ai)) + 14:.1f}" fill="#d62728">'
        f"kernel AI {roof.intensity:.4g}</text>"
    )
    if achieved_per_s is not None:
        parts.append(
            f'<circle cx="{X(ai):.1f}" cy="{Y(achieved_per_s):.1f}" r="5" fill="none" stroke="#2ca02c" '
            f'stroke-width="2"/><text x="{X(ai) + 7:.1f}" y="{Y(achieved_per_s):.1f}" fill="#2ca02c">'
            "achieved</text>"
        )
    parts.append(
        f'<text x="{left + pw / 2:.1f}" y="{top + ph + 30}" text-anchor="middle">'
        "arithmetic intensity (FLOP/byte)</text>"
        f'<text x="16" y="{top + ph / 2:.1f}" transform="rotate(-90 16 {top + ph / 2:.1f})" '
        'text-anchor="middle">TFLOP/s</text>'
    )
    for i, c in enumerate((compute, memory)):
        parts.append(
            f'<text x="{left}" y="{top + ph + 55 + 16 * i}" font-size="10">{_esc(c.citation())}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)
