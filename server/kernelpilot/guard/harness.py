"""The guard harness: every semantic check of a candidate against its contract, never in the judging process.

Why not there: the candidate's module is imported here, so whatever it patches or starts must not reach the
process that judges (`tasks.evaluate`). A paired eval runs the checks first in its timing process
(`guard.checked`, which sets aside what they imported before timing); the baseline refresh and the
unpaired fallback run them alone: `python -m kernelpilot.guard.harness CONTRACT_JSON WORKDIR` prints one
`HarnessReport` as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.guard import contract as cmod
from kernelpilot.guard.backend import Backend, backend_for
from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.models import CallCheck, Contract, HarnessReport, Rejection
from kernelpilot.guard.selection import resolve, timed_view
from kernelpilot.guard.semantic import (
    CallContext,
    Compared,
    ShapeRun,
    call_record,
    check_output,
    interior_cached,
    out_clone,
    out_digest,
    out_numel,
    perturb_interior,
)
from kernelpilot.guard.timed import reference_f64

SEED_STRIDE = 1000  # seeds of shape i are seed + i * SEED_STRIDE + j: every call gets its own values


def _call(loaded: cmod.Loaded, be: Backend, inputs: list[Any], out_buf: Any) -> Any:
    c = loaded.contract
    kwargs = {"out": out_buf} if c.out else {}
    result = loaded.candidate(*inputs, **kwargs)
    be.sync()
    if result is None and c.out:
        return out_buf
    if result is None and c.in_place:
        return inputs[c.in_place[0]]
    return result


class _Checker:
    """State across the calls of one harness run."""

    def __init__(self, loaded: cmod.Loaded) -> None:
        self.loaded = loaded
        self.c = loaded.contract
        self.dtype = cmod.float_dtype(self.c.dtype)
        self.calls: list[CallCheck] = []
        self.timed_passed = False
        self.be: Backend | None = None
        self.error = ""

    def one_call(
        self, shape: dict[str, int], seed: int, si: int, run: ShapeRun
    ) -> tuple[Rejection | None, Any, Compared | None]:
        inputs = self.loaded.make(shape, seed)
        if self.be is None:
            self.be = backend_for(inputs[0], self.loaded.device)
        be = self.be
        ref = reference_f64(self.loaded, be, inputs)
        rdig = out_digest(be, ref)
        if rdig in run.refs:
            raise ContractError(
                f"the inputs factory gave the same reference output for two seeds of shape {shape}",
                "make the values depend on the seed (an identity or cached answer must fail)",
            )
        run.refs.append(rdig)
        out_buf = be.empty(ref, self.dtype) if self.c.out else None
        if out_buf is not None:
            be.poison(out_buf)
        sums = [be.digest(x) for x in inputs]
        be.scribble(out_numel(ref) * _elem(self.dtype))
        tol, _ = cmod.tolerance(self.c, shape)
        ctx = CallContext(
            be, self.dtype, self.loaded.device, tol, si == 0, self.timed_passed, self.c.in_place
        )
        ctx.selection = resolve(self.c, shape, tol.rtol, self.dtype)
        try:
            out = _call(self.loaded, be, inputs, out_buf)
        except Exception as exc:  # the candidate raised: correctness_failed on the timed shape
            if si == 0:
                self.error = f"the candidate raised {type(exc).__name__}: {exc} on shape {shape}"
                return None, None, None
            rej = Rejection(
                check="semantic",
                status="rejected_shape_specific",
                evidence=f"correct on the timed shape but raised {type(exc).__name__}: {exc} on {shape}",
            )
            return rej, None, None
        length = cmod.reduced_length(self.c, shape)
        found, cmp = check_output(ctx, out, ref, inputs, sums, run, length)
        if found is None:
            run.outputs.append(out_digest(be, out))
        return found, out, cmp

    def determinism(self, shape: dict[str, int], seed: int, run: ShapeRun) -> Rejection | None:
        assert self.be is not None
        be = self.be
        digests = {out_digest(be, run.first_out)}
        for _ in range(2):  # two more calls on the values of the first one: all three must agree bitwise
            inputs = self.loaded.make(shape, seed)
            buf = be.empty(run.first_out, self.dtype) if self.c.out else None
            try:
                out = _call(self.loaded, be, inputs, buf)
            except Exception as exc:  # the candidate raised on values it passed before: not deterministic
                return Rejection(
                    check="semantic",
                    status="rejected_nondeterministic",
                    evidence=f"a repeated call on equal values (shape {shape}, seed {seed}) raised "
                    f"{type(exc).__name__}: {exc}",
                )
            digests.add(out_digest(be, out))
        if len(digests) > 1:
            return Rejection(
                check="semantic",
                status="rejected_nondeterministic",
                evidence=f"three calls on equal input values (shape {shape}, seed {seed}) gave "
                f"{len(digests)} different outputs and the contract declares the op deterministic",
            )
        return None

    def interior(self, shape: dict[str, int], seed: int) -> Rejection | None:
        """Calls on the same input buffers whose values change only away from the first and last
        `semantic.ENDS` elements of one input at a time: the output must follow the reference's. A memo
        keyed on the inputs' pointers and a fingerprint of their first values returns its earlier answer
        (`interior_cached`); one keyed on every value misses and computes honestly."""
        assert self.be is not None
        be, c = self.be, self.c
        inputs = self.loaded.make(shape, seed)
        other = self.loaded.make(shape, seed + SEED_STRIDE // 2)
        out_buf = None
        ref = reference_f64(self.loaded, be, inputs)
        if c.out:
            out_buf = be.empty(ref, self.dtype)
        prev = out_digest(be, _call(self.loaded, be, inputs, out_buf))
        tol, _ = cmod.tolerance(c, shape)
        length = cmod.reduced_length(c, shape)
        for i, x in enumerate(inputs):
            if i in c.in_place or not perturb_interior(be, x, other[i]):
                continue
            ref_before, ref = out_digest(be, ref), reference_f64(self.loaded, be, inputs)
            if out_digest(be, ref) == ref_before:
                continue  # the reference does not read those values: nothing to see
            sums = [be.digest(v) for v in inputs]
            ctx = CallContext(be, self.dtype, self.loaded.device, tol, True, True, c.in_place)
            ctx.selection = resolve(c, shape, tol.rtol, self.dtype)
            try:
                out = _call(self.loaded, be, inputs, out_buf)
            except Exception as exc:  # the candidate raised on values it was given: as any failed call
                why = (
                    f"raised {type(exc).__name__}: {exc} when values away from the ends of input {i} changed"
                )
                return Rejection(check="semantic", status="rejected_wrong_output", evidence=why)
            found, cmp = check_output(ctx, out, ref, inputs, sums, ShapeRun(outputs=[prev]), length)
            digest = out_digest(be, out)
            if found is not None:
                return interior_cached(i, cmp) if digest == prev else found
            prev = digest
        return None

    def shape(self, si: int, shape: dict[str, int]) -> Rejection | None:
        run = ShapeRun()
        base = self.c.seed + si * SEED_STRIDE
        for j in range(self.c.seeds):
            rej, out, cmp = self.one_call(shape, base + j, si, run)
            self.calls.append(call_record(shape, base + j, cmp, rej))
            if self.error:
                return None
            if rej is not None:
                return rej
            if j == 0:
                assert self.be is not None
                run.first_out = out_clone(self.be, out)
        if self.c.deterministic:
            rej = self.determinism(shape, base, run)
            if rej is not None:
                return rej
        if si == 0:  # the timed shape: the one a memo of the timed inputs is built for
            return self.interior(shape, base + self.c.seeds)
        return None


def _elem(dtype: str) -> int:
    return {"fp64": 8, "fp32": 4, "fp16": 2, "bf16": 2, "tf32": 4, "fp8": 1}[dtype]


def _timed_refs(loaded: cmod.Loaded, be: Backend | None) -> list[list[float]]:
    """The reference on the input sets the timing process times (`guard.timed`), sampled as it samples
    the timed outputs. In-place contracts have none: repeated timed calls keep changing their input."""
    from kernelpilot.guard.timed import TIMED_SETS, TIMING_SEED

    if be is None:
        return []
    shape = loaded.contract.shapes[0]
    sel = loaded.contract.selection
    if sel is not None and sel.values is None:
        return []  # ids alone are not compared under the timer (`selection.timed_view`)
    return [
        be.fingerprint(timed_view(sel, reference_f64(loaded, be, loaded.make(shape, TIMING_SEED + i))))
        for i in range(TIMED_SETS)
    ]


def run_checks(contract: Contract, workdir: Path) -> HarnessReport:
    """Every semantic check in this process (the caller runs it in a fresh one: `main`)."""
    t0 = time.perf_counter()
    loaded = cmod.Loaded(contract, workdir)
    chk = _Checker(loaded)
    rejection = None
    for si, shape in enumerate(contract.shapes):
        rejection = chk.shape(si, shape)
        if rejection is not None or chk.error:
            break
        if si == 0:
            chk.timed_passed = True
    tol, source = cmod.tolerance(contract, contract.shapes[0])
    refs = (
        _timed_refs(loaded, chk.be) if rejection is None and not chk.error and not contract.in_place else []
    )
    return HarnessReport(
        timed_refs=refs,
        backend=chk.be.name if chk.be else "?",
        dtype=chk.dtype,
        tolerance=tol,
        tolerance_source=source,
        calls=chk.calls,
        rejection=rejection,
        error=chk.error,
        seconds=time.perf_counter() - t0,
    )


def watched_checks(contract: Contract, workdir: Path) -> HarnessReport:
    """`run_checks` under a `guard.observe.Watch` started before the candidate's module loads.

    Why here too: a candidate that replaces a timing function or starts a thread when imported (or when
    called) is rejected for that before any timing process starts; its semantic results, which such a
    candidate can skew (a worker thread's output read before it is written looks nondeterministic), come
    second. The timing process watches again (`timing.compare`); `guard.checked` keeps this one watch
    running into the timing instead."""
    from kernelpilot.guard.observe import Watch

    watch = Watch()
    report = run_checks(contract, workdir)
    return with_seen(report, watch.findings())


def with_seen(report: HarnessReport, seen: list[str]) -> HarnessReport:
    """The report, rejected first for what the Watch saw while the candidate was loaded and checked."""
    if not seen:
        return report
    replaced = any(f.startswith("replaced: ") for f in seen)
    after = report.rejection.status if report.rejection else (report.error or "passed")
    from kernelpilot.guard.observe import HONEST_THREAD

    honest = (
        "" if replaced else f"; a thread running the candidate's own code defers its work: {HONEST_THREAD}"
    )
    report.rejection = Rejection(
        check="observation",
        status="rejected_timer_replaced" if replaced else "rejected_thread",
        evidence=f"while the guard harness loaded and called the candidate: {' | '.join(seen)} (the "
        f"semantic checks then gave: {after}){honest}",
    )
    report.error = ""
    report.timed_refs = []
    return report


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m kernelpilot.guard.harness CONTRACT_JSON WORKDIR", file=sys.stderr)
        return 2
    try:
        contract = Contract.model_validate_json(Path(args[0]).read_text(encoding="utf-8"))
        report = watched_checks(contract, Path(args[1]))
    except KernelpilotError as exc:
        print(json.dumps({"error": exc.to_dict()}))
        return 1
    print(report.model_dump_json())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
