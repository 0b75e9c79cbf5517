"""The semantic checks of a candidate against its reference contract (run by `harness`, before any timing).

Per shape (the first is the timed one) and per fresh seed: new input values, the reference computed on
float64 copies before the candidate runs, allocator memory scribbled and any `out` buffer poisoned, the
inputs checksummed before and after, the output required to be a real array/tensor of the declared dtype,
then compared elementwise. A failing call is named by the most specific check it meets (see `classify`);
after the seeds, two calls on equal values must agree bitwise where the contract says deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.guard import contract as cmod
from kernelpilot.guard.backend import Backend
from kernelpilot.guard.models import CallCheck, Rejection, RejectStatus, Tolerance

# A failing output within this many times a lower format's default tolerance is named rejected_precision.
LOWER_SLACK = 4.0


@dataclass
class Compared:
    ok: bool
    max_rel_err: float
    max_ulp_err: float
    bad: int
    total: int


def compare(be: Backend, out: Any, ref: Any, tol: Tolerance, dtype: str) -> Compared:
    """Elementwise |out - ref| <= atol + rtol |ref| in float64; errors in ULPs of the declared dtype too."""
    xp = be.xp
    o, r = be.f64(out), be.f64(ref)
    diff = xp.abs(o - r)
    scale = float(xp.sqrt((r * r).mean())) if numel(r) else 0.0
    atol = tol.atol if tol.atol is not None else tol.rtol * scale
    limit = atol + tol.rtol * xp.abs(r)
    badmask = ~(diff <= limit)  # NaN compares false: a NaN is bad
    bad = int(badmask.sum())
    # Errors are reported at the scale max(|ref|, RMS(ref)): an entry that cancels to near zero is measured
    # against the output's scale, as the tolerance's atol judges it.
    tiny = 2.0**-126 if dtype != "fp64" else 2.0**-1022
    mag = xp.maximum(xp.abs(r), xp.full_like(r, max(scale, tiny)))
    ulp = xp.exp2(xp.floor(xp.log2(mag)) - cmod.MANTISSA_BITS[dtype])
    max_rel = _finite_max(xp, diff / mag)
    max_ulp = _finite_max(xp, diff / ulp)
    return Compared(bad == 0, max_rel, max_ulp, bad, numel(r))


def numel(x: Any) -> int:
    n = x.numel() if callable(getattr(x, "numel", None)) else x.size
    return int(n)


def _finite_max(xp: Any, x: Any) -> float:
    if numel(x) == 0:
        return 0.0
    m = float(x.max())
    return m if not math.isnan(m) else math.inf


@dataclass
class ShapeRun:
    """What one shape's calls left behind for the later checks (cached answers, determinism)."""

    outputs: list[str] = field(default_factory=list)  # digests of earlier outputs of this shape
    refs: list[str] = field(default_factory=list)
    first_out: Any = None


@dataclass
class CallContext:
    be: Backend
    dtype: str
    device: str
    tol: Tolerance
    timed_shape: bool
    timed_passed: bool
    in_place: list[int]


def _reject(status: RejectStatus, evidence: str, **numbers: float) -> Rejection:
    finite = {k: v for k, v in numbers.items() if math.isfinite(v)}  # NaN/inf have no JSON number
    return Rejection(check="semantic", status=status, evidence=evidence, numbers=finite)


def _wrong_dtype(ctx: CallContext, out: Any) -> Rejection:
    got = ctx.be.dtype_name(out)
    if got in cmod.MANTISSA_BITS and cmod.MANTISSA_BITS[got] < cmod.MANTISSA_BITS[ctx.dtype]:
        return _reject(
            "rejected_precision", f"output dtype {got} is lower precision than the declared {ctx.dtype}"
        )
    return _reject("rejected_wrong_output", f"output dtype {got} is not the declared {ctx.dtype}")


def _lower_precision(ctx: CallContext, out: Any, ref: Any, length: int) -> str | None:
    """The lower format whose default tolerance the output meets (a computation in that format), if any."""
    lower = cmod.LOWER.get(ctx.dtype, ())
    for low in lower:
        tol = Tolerance(rtol=LOWER_SLACK * cmod.default_rtol(low, length))
        if compare(ctx.be, out, ref, tol, ctx.dtype).ok:
            same = [d for d in lower if cmod.MANTISSA_BITS[d] == cmod.MANTISSA_BITS[low]]
            return "/".join(same)
    return None


def classify(
    ctx: CallContext, out: Any, ref: Any, inputs: list[Any], run: ShapeRun, cmp: Compared, length: int
) -> Rejection:
    """Name a call whose values failed by the most specific check it meets."""
    be = ctx.be
    ev = (
        f"{cmp.bad} of {cmp.total} elements out of tolerance (max rel err {cmp.max_rel_err:.3g}, "
        f"max {cmp.max_ulp_err:.3g} ULP)"
    )
    nums = {"bad": float(cmp.bad), "max_rel_err": cmp.max_rel_err, "max_ulp_err": cmp.max_ulp_err}
    poisoned = be.poisoned_count(out)
    if poisoned:
        return _reject(
            "rejected_stale_output",
            f"{poisoned} of {cmp.total} output elements still hold the poison written before the call "
            "(never written by the candidate: stale or uninitialised memory)",
            poisoned=float(poisoned),
            **nums,
        )
    digest = be.digest(out)
    for i, x in enumerate(inputs):
        if (
            tuple(x.shape) == tuple(out.shape)
            and be.dtype_name(x) == be.dtype_name(out)
            and be.digest(x) == digest
        ):
            return _reject(
                "rejected_constant_output", f"output equals input {i} bitwise (identity); {ev}", **nums
            )
    flat = be.f64(out).reshape(-1)
    if numel(flat) > 1 and float(flat.max()) == float(flat.min()):
        return _reject(
            "rejected_constant_output", f"output is the constant {float(flat.max())!r}; {ev}", **nums
        )
    if digest in run.outputs:
        return _reject(
            "rejected_cached_output",
            f"output equals the candidate's output of an earlier call with different input values "
            f"(call {run.outputs.index(digest) + 1} of this shape); {ev}",
            **nums,
        )
    if not ctx.timed_shape and ctx.timed_passed:
        return _reject(
            "rejected_shape_specific", f"correct on the timed shape but not on this one: {ev}", **nums
        )
    low = _lower_precision(ctx, out, ref, length)
    if low is not None:
        return _reject(
            "rejected_precision",
            f"{ev}: within the tolerance of {low}, not of the declared {ctx.dtype} "
            "(computed in lower precision)",
            **nums,
        )
    return _reject("rejected_wrong_output", ev, **nums)


def check_output(
    ctx: CallContext, out: Any, ref: Any, inputs: list[Any], sums: list[str], run: ShapeRun, length: int
) -> tuple[Rejection | None, Compared | None]:
    """All checks of one call's output; (rejection or None, the comparison when values were compared)."""
    be = ctx.be
    problem = be.real_problem(out, ctx.device)
    if problem:
        return _reject("rejected_lazy_output", problem), None
    if be.dtype_name(out) != ctx.dtype:
        return _wrong_dtype(ctx, out), None
    after = [be.digest(x) for x in inputs]
    changed = [
        i for i, (a, b) in enumerate(zip(sums, after, strict=True)) if a != b and i not in ctx.in_place
    ]
    if changed:
        return _reject(
            "rejected_input_mutation",
            f"input(s) {changed} changed during the call (checksums differ) and the contract does not "
            "declare them in-place",
            inputs_changed=float(len(changed)),
        ), None
    if tuple(out.shape) != tuple(ref.shape):
        why = f"output shape {tuple(out.shape)} is not the reference's {tuple(ref.shape)}"
        status: RejectStatus = (
            "rejected_shape_specific" if not ctx.timed_shape and ctx.timed_passed else "rejected_wrong_output"
        )
        return _reject(status, why), None
    cmp = compare(be, out, ref, ctx.tol, ctx.dtype)
    if cmp.ok:
        return None, cmp
    return classify(ctx, out, ref, inputs, run, cmp, length), cmp


def call_record(shape: dict[str, int], seed: int, cmp: Compared | None, rej: Rejection | None) -> CallCheck:
    return CallCheck(
        shape=shape,
        seed=seed,
        max_rel_err=cmp.max_rel_err if cmp else None,
        max_ulp_err=cmp.max_ulp_err if cmp else None,
        ok=rej is None,
        problem=f"{rej.status}: {rej.evidence}" if rej else "",
    )
