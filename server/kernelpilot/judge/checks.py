"""The semantic checks, run by the judge on outputs it reads from the arena (docs/guard.md, "The checks").

Per shape (the first is the timed one) and per fresh seed (a secret one, `contract.fresh_seed`): the
reference first, on the judge's own float64 copies; the inputs written into the arena and the outputs
poisoned while the runner is stopped; one call; the runner stopped again; then `guard.semantic`'s checks
on what the arena holds (structure, input mutation, stale poison, identity/constant, cached, shape
specific, precision, wrong values), and the **declared-precision check**, which no tolerance override turns
off (`declared_precision`). After the seeds, two calls on equal values must agree bitwise (deterministic
contracts). The candidate cannot see which calls are checks: every timed call is one too (`clock`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.guard import contract as cmod
from kernelpilot.guard import selection as smod
from kernelpilot.guard.backend import Backend, backend_for
from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.models import CallCheck, Rejection, Tolerance
from kernelpilot.guard.semantic import (
    CallContext,
    ShapeRun,
    _wrong_dtype,
    call_record,
    check_output,
    numel,
    out_digest,
)
from kernelpilot.guard.timed import reference_f64
from kernelpilot.judge.arena import DTYPE_NAMES, dtype_name, is_array
from kernelpilot.judge.contract import JudgeContract, fresh_seed
from kernelpilot.judge.procs import Side

# A call whose error against the true reference is this many times the declared dtype's default
# tolerance, and which is at least this many times closer to the reference on inputs rounded to a lower
# format, computed in that format (tolerance override or not).
PRECISION_SLACK = 4.0
CLOSER = 4.0
SAME_FORMAT_SHARE = 0.9  # share of outputs exactly representable in a lower format: rounded to it


class CandidateRaised(Exception):
    """The checked side raised on the timed shape (correctness_failed)."""


@dataclass
class Prepared:
    """One shape's layout facts: the library, the backend and the output arrays' (dtype, shape)."""

    lib: str
    be: Backend
    outputs: list[tuple[str, tuple[int, ...]]]
    selection: smod.Spec | None
    tol: Tolerance
    tol_source: str
    length: int


def reject(status: Any, evidence: str, **numbers: float) -> Rejection:
    nums = {k: v for k, v in numbers.items() if math.isfinite(v)}
    return Rejection(check="semantic", status=status, evidence=evidence, numbers=nums)


def output_specs(jc: JudgeContract, ref: Any, sel: smod.Spec | None) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype name, shape) of each array the candidate must return, from the float64 reference."""
    if sel is None:
        r = ref
        if not is_array(r):
            raise ContractError("the contract reference returned no array", "return a tensor/array")
        floating = "float" in dtype_name(r)
        return [(DTYPE_NAMES[jc.dtype] if floating else dtype_name(r), tuple(r.shape))]
    refs, _ = smod.split_reference(sel, ref)
    got = []
    for i, r in enumerate(refs):
        got.append(("int64" if i == sel.sel.ids else DTYPE_NAMES[sel.values_dtype], tuple(r.shape)))
    return got


def prepare(jc: JudgeContract, shape: dict[str, int], inputs: list[Any], ref: Any) -> Prepared:
    c = jc.contract
    lib = "torch" if type(inputs[0]).__module__.split(".")[0] == "torch" else "numpy"
    be = backend_for(inputs[0], "cpu")
    tol, source = cmod.tolerance(c, shape)
    sel = smod.resolve(c, shape, tol.rtol, jc.dtype)
    return Prepared(lib, be, output_specs(jc, ref, sel), sel, tol, source, cmod.reduced_length(c, shape))


def as_output(outs: list[Any], sel: smod.Spec | None) -> Any:
    return tuple(outs) if sel is not None else outs[0]


def runner_problem(
    reply: dict[str, Any], timed_shape: bool, timed_passed: bool, shape: dict[str, int]
) -> Rejection:
    """The rejection a runner's failed reply names (a raise on the timed shape is raised instead)."""
    kind, why = str(reply.get("kind", "")), str(reply.get("error", ""))
    other = not timed_shape and timed_passed
    if kind == "raised":
        if timed_shape:
            raise CandidateRaised(f"the candidate raised {why} on shape {shape}\n{reply.get('trace', '')}")
        return reject("rejected_shape_specific", f"correct on the timed shape but raised {why} on {shape}")
    if kind == "lazy":
        return reject("rejected_lazy_output", why)
    if kind == "dtype":
        got, _, want = why.partition("|")
        return _wrong_dtype(_canon(got), _canon(want))
    if kind == "shape" and other:
        return reject("rejected_shape_specific", f"{why} on shape {shape}")
    return reject("rejected_wrong_output", why or f"the runner answered {kind!r}")


def _canon(name: str) -> str:
    from kernelpilot.roofline.errors import UnknownDtypeError
    from kernelpilot.roofline.ops import canonical_dtype

    try:
        return canonical_dtype(name)
    except UnknownDtypeError:
        return name


@dataclass
class Checker:
    jc: JudgeContract
    side: Side
    calls: list[CallCheck] = field(default_factory=list)
    timed_passed: bool = False
    prepared: Prepared | None = None
    seconds_reference: float = 0.0

    def layout(self, inputs: list[Any], prep: Prepared, n_slots: int) -> None:
        nbytes = self.side.arena.plan(inputs, prep.outputs, n_slots, prep.lib)
        self.side.cont()
        msg = {
            "op": "layout",
            "slots": self.side.arena.slots,
            "bytes": nbytes,
            "lib": prep.lib,
            "device": "cpu",
        }
        got = self.side.ask(msg)
        self.side.stop()
        if not got.get("ok"):
            raise ContractError(f"the runner refused the layout: {got.get('error')}", "report this")

    def call(self, slots: list[int]) -> dict[str, Any]:
        self.side.cont()
        got = self.side.ask({"op": "run", "slots": slots})
        self.side.stop()
        return got

    def one(
        self, shape: dict[str, int], si: int, run: ShapeRun, prep: Prepared | None
    ) -> tuple[Rejection | None, Prepared]:
        jc, arena = self.jc, self.side.arena
        seed = fresh_seed()  # secret while the runners live; recorded in the report, written after they end
        inputs = jc.make(shape, seed)
        ref = reference_f64(jc, backend_for(inputs[0], "cpu"), inputs)
        if prep is None:
            prep = prepare(jc, shape, inputs, ref)
            self.layout(inputs, prep, 2)
        rdig = out_digest(prep.be, ref)
        if rdig in run.refs:
            raise ContractError(
                f"the inputs factory gave the same reference output for two seeds of shape {shape}",
                "make the values depend on the seed (an identity or cached answer must fail)",
            )
        run.refs.append(rdig)
        arena.write(0, inputs)
        arena.poison(0)
        sums = [prep.be.digest(x) for x in arena.inputs(0) if is_array(x)]
        reply = self.call([0])
        ctx = CallContext(
            prep.be, jc.dtype, "cpu", prep.tol, si == 0, self.timed_passed, jc.contract.in_place
        )
        ctx.selection = prep.selection
        if not reply.get("ok"):
            rej = runner_problem(reply, si == 0, self.timed_passed, shape)
            self.calls.append(call_record(shape, seed, None, rej))
            return rej, prep
        out = as_output(arena.outputs(0), prep.selection)
        arrays = [x for x in arena.inputs(0) if is_array(x)]
        found, cmp = check_output(ctx, out, ref, arrays, sums, run, prep.length)
        if found is None and prep.selection is None and prep.be.is_float(out):
            found = declared_precision(jc, prep, inputs, out, ref)
        elif found is not None:
            found = confirmed_precision(jc, prep, inputs, out, ref, found)
        self.calls.append(call_record(shape, seed, cmp, found))
        if found is None:
            run.outputs.append(out_digest(prep.be, out))
            if run.first_out is None:
                run.first_out = (inputs, [prep.be.clone(o) for o in arena.outputs(0)])
        return found, prep

    def determinism(self, shape: dict[str, int], run: ShapeRun, prep: Prepared) -> Rejection | None:
        inputs, first = run.first_out
        arena = self.side.arena
        for s in (0, 1):
            arena.write(s, inputs)
            arena.poison(s)
        reply = self.call([0, 1])
        if not reply.get("ok"):
            return reject("rejected_nondeterministic", f"a repeated call on equal values ({shape}) failed: "
                          f"{reply.get('kind')}: {reply.get('error')}")  # fmt: skip
        want = "|".join(prep.be.digest(o) for o in first)
        got = {"|".join(prep.be.digest(o) for o in arena.outputs(s)) for s in (0, 1)}
        if got != {want}:
            return reject(
                "rejected_nondeterministic",
                f"three calls on equal input values ({shape}) gave {len(got | {want})} different outputs "
                "and the contract declares the op deterministic",
            )
        return None

    def shape(self, si: int, shape: dict[str, int]) -> Rejection | None:
        run = ShapeRun()
        prep: Prepared | None = None
        for _ in range(self.jc.contract.seeds):
            rej, prep = self.one(shape, si, run, prep)
            if rej is not None:
                return rej
        if si == 0:
            self.prepared = prep
        if self.jc.contract.deterministic and prep is not None and run.first_out is not None:
            return self.determinism(shape, run, prep)
        return None

    def all_shapes(self) -> Rejection | None:
        for si, shape in enumerate(self.jc.contract.shapes):
            rej = self.shape(si, shape)
            if rej is not None:
                return rej
            if si == 0:
                self.timed_passed = True
        return None


# ---- the declared precision, whatever the tolerance says ----


def _round_to(be: Backend, x: Any, fmt: str) -> Any:
    """float64 copy of `x` rounded to `fmt` (tf32: 10 mantissa bits, round to nearest even)."""
    xp = be.xp
    if fmt == "tf32":
        f32 = x.to(xp.float32) if be.name.startswith("torch") else x.astype("float32")
        bits = f32.view(xp.int32) if be.name.startswith("torch") else f32.view("int32")
        lsb = (bits >> 13) & 1
        rounded = (bits + 0x0FFF + lsb) & ~0x1FFF
        back = rounded.view(xp.float32) if be.name.startswith("torch") else rounded.view("float32")
        return be.f64(back)
    if be.name.startswith("torch"):
        names = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8": "float8_e4m3fn"}
        dt = getattr(xp, names[fmt], None)
        return be.f64(x.to(dt)) if dt is not None else None
    names = {"fp32": "float32", "fp16": "float16"}
    return be.f64(x.astype(names[fmt])) if fmt in names else None


def _max_rel(be: Backend, out: Any, ref: Any) -> float:
    xp = be.xp
    o, r = be.f64(out), be.f64(ref)
    scale = float(xp.sqrt((r * r).mean())) if numel(r) else 0.0
    if not scale:
        return 0.0
    m = float(xp.abs(o - r).max()) / scale
    return m if not math.isnan(m) else math.inf


def lower_format(jc: JudgeContract, prep: Prepared, inputs: list[Any], out: Any, err: float) -> str:
    """Evidence that `out` was computed in a format below the declared one ("" when there is none): its
    error is CLOSER x smaller against the reference on inputs rounded to that format, or SAME_FORMAT_SHARE
    of its values are exactly that format's."""
    be = prep.be
    lower = cmod.LOWER.get(jc.dtype, ())
    for fmt in lower:
        # formats of one mantissa width round alike: named together (tf32/fp16)
        low = "/".join(d for d in lower if cmod.MANTISSA_BITS[d] == cmod.MANTISSA_BITS[fmt])
        rounded = [(_round_to(be, x, fmt) if is_array(x) and be.is_float(x) else x) for x in inputs]
        if any(r is None for r in rounded):
            continue
        err_low = _max_rel(be, out, reference_f64(jc, be, rounded))
        if err_low * CLOSER <= err:
            return (
                f"computed in {low}, below the declared {jc.dtype}: max rel err {err:.3g} against the "
                f"float64 reference but {err_low:.3g} against the reference on inputs rounded to {low}"
            )
        share = _share_representable(be, out, fmt)
        if share >= SAME_FORMAT_SHARE:
            return (
                f"{share:.0%} of the output values are exactly {low} values (rounded to {low}); max rel "
                f"err {err:.3g}"
            )
    return ""


def declared_precision(
    jc: JudgeContract, prep: Prepared, inputs: list[Any], out: Any, ref: Any
) -> Rejection | None:
    """An output that passed its tolerance but was computed below the declared dtype: less accurate than
    the declared dtype allows (PRECISION_SLACK x its default tolerance) with the evidence of `lower_format`.
    Independent of the contract's tolerance override."""
    err = _max_rel(prep.be, out, ref)
    limit = PRECISION_SLACK * cmod.default_rtol(jc.dtype, prep.length)
    if err <= limit:
        return None
    why = lower_format(jc, prep, inputs, out, err)
    if not why:
        return None
    return reject(
        "rejected_precision",
        f"{why} ({err / limit * PRECISION_SLACK:.1f}x the {jc.dtype} default tolerance); a tolerance "
        "override does not permit arithmetic below the declared dtype",
        max_rel_err=err,
    )


def confirmed_precision(
    jc: JudgeContract, prep: Prepared, inputs: list[Any], out: Any, ref: Any, rej: Rejection
) -> Rejection:
    """A `rejected_precision` by tolerance band kept only with evidence of lower-format arithmetic; else
    the values are wrong (unwritten memory within 4x fp8's loose tolerance is not a precision choice)."""
    if rej.status != "rejected_precision" or prep.selection is not None or not prep.be.is_float(out):
        return rej
    if "dtype" in rej.evidence:  # a lower-precision output dtype: evidence enough
        return rej
    err = _max_rel(prep.be, out, ref)
    why = lower_format(jc, prep, inputs, out, err)
    if why:
        return reject("rejected_precision", f"{rej.evidence.split(':', 1)[0]}: {why}", **rej.numbers)
    return reject(
        "rejected_wrong_output",
        f"{rej.evidence.split(': within the tolerance', 1)[0]}; the errors do not follow any lower format's "
        "rounding of the inputs (wrong or unwritten values, not lower precision)",
        **rej.numbers,
    )


def _share_representable(be: Backend, out: Any, low: str) -> float:
    o = be.f64(out).reshape(-1)
    rounded = _round_to(be, out, low)
    if rounded is None:
        return 0.0
    nz = o != 0
    n = int(nz.sum())
    return float(((rounded.reshape(-1) == o) & nz).sum()) / n if n else 0.0
