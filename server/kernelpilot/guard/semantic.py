"""The semantic checks of a candidate against its reference contract (run by `harness`, before any timing).

Per shape (the first is the timed one) and per fresh seed: new input values, the reference computed on
float64 copies before the candidate runs, allocator memory scribbled and any `out` buffer poisoned, the
inputs checksummed before and after, the output required to be a real array/tensor of the declared dtype,
then compared elementwise (or, for a selection op, as sets of ids with tie tolerance and values matched by
rank: `guard.selection`; each array of a tuple output goes through the same checks). A failing call is
named by the most specific check it meets (see `classify`); after the seeds, two calls on equal values
must agree bitwise where the contract says deterministic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from kernelpilot.guard import contract as cmod
from kernelpilot.guard import selection as smod
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
    why: str = ""  # a selection's evidence (ids judged per row)


def _limit(xp: Any, r: Any, tol: Tolerance) -> tuple[Any, float]:
    """(atol + rtol |ref| elementwise, RMS of ref): atol defaults to rtol x RMS(ref)."""
    scale = float(xp.sqrt((r * r).mean())) if numel(r) else 0.0
    atol = tol.atol if tol.atol is not None else tol.rtol * scale
    return atol + tol.rtol * xp.abs(r), scale


def within(be: Backend, out: Any, ref: Any, tol: Tolerance) -> bool:
    """`compare`'s verdict alone, in a few passes (no ULP figures): for the many calls that pass."""
    o, r = be.f64(out), be.f64(ref)
    if tuple(o.shape) != tuple(r.shape):
        return False
    limit, _ = _limit(be.xp, r, tol)
    return bool((be.xp.abs(o - r) <= limit).all())  # NaN compares false: a NaN fails


def compare(be: Backend, out: Any, ref: Any, tol: Tolerance, dtype: str) -> Compared:
    """Elementwise |out - ref| <= atol + rtol |ref| in float64; errors in ULPs of the declared dtype too."""
    xp = be.xp
    o, r = be.f64(out), be.f64(ref)
    diff = xp.abs(o - r)
    limit, scale = _limit(xp, r, tol)
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


def out_numel(x: Any) -> int:
    """Elements of an output, summed over the arrays of a tuple output."""
    return sum(numel(p) for p in smod.parts(x))


def out_digest(be: Backend, x: Any) -> str:
    """The digest of an output (each array of a tuple output, joined)."""
    return "|".join(be.digest(p) for p in smod.parts(x))


def out_clone(be: Backend, x: Any) -> Any:
    got = [be.clone(p) for p in smod.parts(x)]
    return tuple(got) if isinstance(x, (tuple, list)) else got[0]


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
    selection: smod.Spec | None = None


def _reject(status: RejectStatus, evidence: str, **numbers: float) -> Rejection:
    finite = {k: v for k, v in numbers.items() if math.isfinite(v)}  # NaN/inf have no JSON number
    return Rejection(check="semantic", status=status, evidence=evidence, numbers=finite)


def _wrong_dtype(got: str, want: str, what: str = "output") -> Rejection:
    if (
        got in cmod.MANTISSA_BITS
        and want in cmod.MANTISSA_BITS
        and cmod.MANTISSA_BITS[got] < cmod.MANTISSA_BITS[want]
    ):
        return _reject(
            "rejected_precision", f"{what} dtype {got} is lower precision than the declared {want}"
        )
    return _reject("rejected_wrong_output", f"{what} dtype {got} is not the declared {want}")


def measure(ctx: CallContext, out: Any, ref: Any, tol: Tolerance, tie_rtol: float | None = None) -> Compared:
    """The values check of the contract: elementwise, or the selection check (`tie_rtol` overrides its
    default tie tolerance, for the lower-precision test)."""
    spec = ctx.selection
    if spec is None:
        return compare(ctx.be, out, ref, tol, ctx.dtype)
    if tie_rtol is not None and spec.sel.tie_rtol is None:
        spec = replace(spec, tie_rtol=tie_rtol)
    got = smod.align(ctx.be, spec, out, ref)
    if got.why:
        return Compared(False, 0.0, 0.0, got.bad_rows, got.rows, why=got.why)
    if got.cand_values is None:
        return Compared(True, 0.0, 0.0, 0, got.rows)
    cmp = compare(ctx.be, got.cand_values, got.ref_values, tol, spec.values_dtype)
    if not cmp.ok:
        cmp.why = (
            f"ids agree with the reference's as sets (ties aside) in all {got.rows} rows; values matched by "
            f"rank: {cmp.bad} of {cmp.total} out of tolerance (max rel err {cmp.max_rel_err:.3g}, max "
            f"{cmp.max_ulp_err:.3g} ULP)"
        )
    return cmp


def _lower_precision(ctx: CallContext, out: Any, ref: Any, length: int) -> str | None:
    """The lower format whose default tolerance the output meets (a computation in that format), if any."""
    want = ctx.selection.values_dtype if ctx.selection else ctx.dtype
    lower = cmod.LOWER.get(want, ())
    for low in lower:
        rtol = LOWER_SLACK * cmod.default_rtol(low, length)
        if measure(ctx, out, ref, Tolerance(rtol=rtol), tie_rtol=rtol).ok:
            same = [d for d in lower if cmod.MANTISSA_BITS[d] == cmod.MANTISSA_BITS[low]]
            return "/".join(same)
    return None


def _identity_or_constant(be: Backend, out: Any, inputs: list[Any]) -> str:
    """How an output is an input (identity) or one constant ("" when neither), per array of a tuple."""
    for p in smod.parts(out):
        digest = be.digest(p)
        for i, x in enumerate(inputs):
            if (
                tuple(x.shape) == tuple(p.shape)
                and be.dtype_name(x) == be.dtype_name(p)
                and be.digest(x) == digest
            ):
                return f"output equals input {i} bitwise (identity)"
        flat = be.f64(p).reshape(-1)
        if numel(flat) > 1 and float(flat.max()) == float(flat.min()):
            return f"output is the constant {float(flat.max())!r}"
    return ""


def classify(
    ctx: CallContext, out: Any, ref: Any, inputs: list[Any], run: ShapeRun, cmp: Compared, length: int
) -> Rejection:
    """Name a call whose values failed by the most specific check it meets."""
    be = ctx.be
    ev = cmp.why or (
        f"{cmp.bad} of {cmp.total} elements out of tolerance (max rel err {cmp.max_rel_err:.3g}, "
        f"max {cmp.max_ulp_err:.3g} ULP)"
    )
    nums = {"bad": float(cmp.bad), "max_rel_err": cmp.max_rel_err, "max_ulp_err": cmp.max_ulp_err}
    poisoned = sum(be.poisoned_count(p) for p in smod.parts(out))
    if poisoned:
        return _reject(
            "rejected_stale_output",
            f"{poisoned} of {out_numel(out)} output elements still hold the poison written before the call "
            "(never written by the candidate: stale or uninitialised memory)",
            poisoned=float(poisoned),
            **nums,
        )
    same = _identity_or_constant(be, out, inputs)
    if same:
        return _reject("rejected_constant_output", f"{same}; {ev}", **nums)
    digest = out_digest(be, out)
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
        want = ctx.selection.values_dtype if ctx.selection else ctx.dtype
        return _reject(
            "rejected_precision",
            f"{ev}: within the tolerance of {low}, not of the declared {want} (computed in lower precision)",
            **nums,
        )
    return _reject("rejected_wrong_output", ev, **nums)


def _pairs(ctx: CallContext, out: Any, ref: Any) -> tuple[list[tuple[Any, Any, str, str]], Rejection | None]:
    """(candidate array, reference array, declared dtype or "int", name) per output; a selection's
    reference loses its trailing scores. A candidate tuple of the wrong length is rejected here."""
    spec = ctx.selection
    if spec is None:  # an integer reference (counts, sorted keys, ids) has an integer output of any width
        return [(out, ref, "int" if smod.is_int(ref) else ctx.dtype, "output")], None
    refs, _ = smod.split_reference(spec, ref)
    got = smod.parts(out)
    if len(got) != spec.n_outputs:
        want = "(values, ids)" if spec.n_outputs == 2 else "the ids"
        return [], _reject(
            "rejected_wrong_output", f"output has {len(got)} array(s); the selection returns {want}"
        )
    names = {spec.sel.ids: ("int", "ids output")}
    if spec.sel.values is not None:
        names[spec.sel.values] = (spec.values_dtype, "values output")
    return [(got[i], refs[i], *names[i]) for i in range(spec.n_outputs)], None


def _structure(ctx: CallContext, pairs: list[tuple[Any, Any, str, str]]) -> Rejection | None:
    """A lazy output or a wrong dtype (per array of a tuple output)."""
    for o, _, _, what in pairs:
        problem = ctx.be.real_problem(o, ctx.device)
        if problem:
            return _reject("rejected_lazy_output", problem if what == "output" else f"{what}: {problem}")
    for o, _, want, what in pairs:
        if want == "int":
            if not smod.is_int(o):
                return _reject("rejected_wrong_output", f"{what} dtype {o.dtype} is not an integer type")
        elif ctx.be.dtype_name(o) != want:
            return _wrong_dtype(ctx.be.dtype_name(o), want, what)
    return None


def check_output(
    ctx: CallContext, out: Any, ref: Any, inputs: list[Any], sums: list[str], run: ShapeRun, length: int
) -> tuple[Rejection | None, Compared | None]:
    """All checks of one call's output; (rejection or None, the comparison when values were compared)."""
    be = ctx.be
    pairs, wrong = _pairs(ctx, out, ref)
    found = wrong or _structure(ctx, pairs)
    if found is not None:
        return found, None
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
    for o, r, _, what in pairs:
        if tuple(o.shape) != tuple(r.shape):
            why = f"{what} shape {tuple(o.shape)} is not the reference's {tuple(r.shape)}"
            status: RejectStatus = (
                "rejected_shape_specific"
                if not ctx.timed_shape and ctx.timed_passed
                else "rejected_wrong_output"
            )
            return _reject(status, why), None
    cmp = measure(ctx, out, ref, ctx.tol)
    if cmp.ok:
        return None, cmp
    return classify(ctx, out, ref, inputs, run, cmp, length), cmp


# Elements left as they were at each end of an input by the interior perturbation (`perturb_interior`): a
# memo keyed on the input pointers and a fingerprint of the first (or last) values still hits.
ENDS = 64


def perturb_interior(be: Backend, x: Any, src: Any) -> bool:
    """Write `src`'s values into `x` in place (same buffer, same pointer) everywhere but its first and last
    `ENDS` elements; False when `x` is not a float input with an interior, or cannot be written through a
    flat view (not contiguous)."""
    n = numel(x)
    if n <= 2 * ENDS or not be.is_float(x) or tuple(src.shape) != tuple(x.shape):
        return False
    before = be.digest(x)
    flat = x.reshape(-1)
    flat[ENDS : n - ENDS] = src.reshape(-1)[ENDS : n - ENDS]
    be.sync()
    return be.digest(x) != before


def interior_cached(i: int, cmp: Compared | None) -> Rejection:
    """The output did not change when input i changed away from its ends: a memo keyed on pointers or a
    fingerprint of the values (the issue-31 memo padded above the floor)."""
    nums = {"bad": float(cmp.bad), "max_rel_err": cmp.max_rel_err} if cmp else {}
    bad = f"; {cmp.bad} of {cmp.total} elements out of tolerance" if cmp else ""
    return _reject(
        "rejected_cached_output",
        f"the output did not change when values away from the ends of input {i} changed (same buffers, the "
        f"first and last {ENDS} elements of each input kept): a memo keyed on pointers/fingerprints{bad}; an "
        "honest version computes every call's output from all of the values it is given",
        input=float(i),
        **nums,
    )


def call_record(shape: dict[str, int], seed: int, cmp: Compared | None, rej: Rejection | None) -> CallCheck:
    return CallCheck(
        shape=shape,
        seed=seed,
        max_rel_err=cmp.max_rel_err if cmp else None,
        max_ulp_err=cmp.max_ulp_err if cmp else None,
        ok=rej is None,
        problem=f"{rej.status}: {rej.evidence}" if rej else "",
    )
