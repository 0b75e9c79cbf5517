"""The selection check: outputs that are not unique (top-k ids, gating experts) judged as sets with ties.

Why not elementwise: a top-k kernel that breaks ties differently from the reference picks other, equally
valid ids (17 % of the rows of a 128-expert bf16 gating in issue 32), and fp32 tail probabilities that
underflow to 0 tie with each other. Per row (`Selection.dim` moved last): every candidate id is in range
and distinct; its reference score is not below the k-th reference score by more than the tie tolerance;
every id scoring above the k-th by more than it is chosen; the order rule holds up to ties; then the values
are matched by rank of the reference score (an id in both sets against the reference's value for it, a tied
substitute against the value of the id it displaced) for `semantic.compare`. The reference returns the
candidate's outputs and, last, every entry's score (docs/guard.md, the contract's `selection`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.models import Contract, Selection


@dataclass
class Spec:
    """A contract's `Selection` for one shape: k resolved, the default tie tolerance filled in."""

    sel: Selection
    k: int
    tie_rtol: float
    values_dtype: str

    @property
    def n_outputs(self) -> int:
        return 1 if self.sel.values is None else 2


def resolve(contract: Contract, shape: dict[str, int], rtol: float, dtype: str) -> Spec | None:
    """The selection spec of a shape (None for an elementwise contract); `rtol` is the values' tolerance."""
    sel = contract.selection
    if sel is None:
        return None
    if contract.out or contract.in_place:
        raise ContractError(
            "a selection contract cannot declare `out` or `in_place`", "return the (values, ids) tuple"
        )
    if sel.values is not None and sel.values == sel.ids:
        raise ContractError("selection `values` and `ids` name the same output", "use 0 and 1")
    if sel.values is None and sel.ids != 0:
        raise ContractError("a selection with ids only has them at index 0", "set ids: 0")
    k = sel.k if isinstance(sel.k, int) else shape.get(sel.k)
    if k is None or k <= 0:
        raise ContractError(
            f"selection k {sel.k!r} is not a positive number or a key of shape {shape}",
            "give k as a number or the shape key that holds it",
        )
    from kernelpilot.guard.contract import float_dtype

    return Spec(sel, k, sel.tie_rtol or rtol, float_dtype(sel.values_dtype) if sel.values_dtype else dtype)


def parts(x: Any) -> list[Any]:
    """The arrays of an output: a tuple/list's items, or the output itself."""
    return list(x) if isinstance(x, (tuple, list)) else [x]


def split_reference(spec: Spec, ref: Any) -> tuple[list[Any], Any]:
    """(the reference's outputs as the candidate returns them, the scores) from the reference's tuple."""
    got = parts(ref)
    if len(got) != spec.n_outputs + 1:
        raise ContractError(
            f"the selection reference returned {len(got)} output(s); expected {spec.n_outputs} like the "
            "candidate, then every entry's scores along dim",
            "return (values, ids, scores) (or (ids, scores) with values: null)",
        )
    return got[:-1], got[-1]


def is_int(x: Any) -> bool:
    return "int" in str(getattr(x, "dtype", "")).lower()


@dataclass
class Aligned:
    """The ids' verdict and the values matched by rank (None when the ids failed or there are none)."""

    bad_rows: int
    rows: int
    why: str
    cand_values: Any = None
    ref_values: Any = None


class _Ops:
    """The few array operations the check needs, for numpy arrays and torch tensors."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.torch = xp.__name__ == "torch"

    def rows(self, x: Any, dim: int, n: int) -> Any:
        return self.xp.moveaxis(x, dim, -1).reshape(-1, n)

    def i64(self, x: Any) -> Any:
        return x.to(self.xp.int64) if self.torch else x.astype(self.xp.int64)

    def take(self, a: Any, idx: Any) -> Any:
        if self.torch:
            return self.xp.gather(a, -1, idx)
        return self.xp.take_along_axis(a, idx, axis=-1)

    def sort_desc(self, x: Any) -> Any:
        if self.torch:
            return self.xp.sort(x, dim=-1, descending=True).values
        return self.xp.sort(x, axis=-1)[:, ::-1]

    def argsort_desc(self, x: Any) -> Any:
        if self.torch:
            return self.xp.argsort(x, dim=-1, descending=True, stable=True)
        return self.xp.argsort(-x, axis=-1, kind="stable")

    def sort(self, x: Any) -> Any:
        return self.xp.sort(x, dim=-1).values if self.torch else self.xp.sort(x, axis=-1)

    def row_mean(self, x: Any) -> Any:
        return x.mean(-1, keepdim=True) if self.torch else x.mean(-1, keepdims=True)

    def nonzero_rows(self, mask: Any) -> tuple[int, int]:
        """(first row, count) of the rows where mask holds; (-1, 0) when none do."""
        idx = self.xp.nonzero(mask, as_tuple=True)[0] if self.torch else self.xp.nonzero(mask)[0]
        count = int(idx.shape[0])
        return (int(idx[0]) if count else -1), count


def align(be: Any, spec: Spec, out: Any, ref: Any) -> Aligned:
    """Judge the candidate's ids against the reference's scores; match the values by rank."""
    ops = _Ops(be.xp)
    sel, k = spec.sel, spec.k
    ref_parts, scores = split_reference(spec, ref)
    dim = sel.dim
    n = int(scores.shape[dim])
    if k > n:
        raise ContractError(f"selection k = {k} exceeds the {n} entries along dim {dim}", "fix k or dim")
    sign = 1.0 if sel.largest else -1.0
    s_orig = ops.rows(be.f64(scores), dim, n)
    s = s_orig * sign  # larger is better from here on
    cand_parts = parts(out)
    ci = ops.rows(ops.i64(cand_parts[sel.ids]), dim, k)
    rows = int(ci.shape[0])
    out_of_range = ((ci < 0) | (ci >= n)).sum(-1) > 0
    first, count = ops.nonzero_rows(out_of_range)
    if count:
        return Aligned(count, rows, f"{count} of {rows} rows hold an id outside [0, {n}) (row {first})")
    srt = ops.sort(ci)
    dup = (srt[:, 1:] == srt[:, :-1]).sum(-1) > 0 if k > 1 else out_of_range
    kth = ops.sort_desc(s)[:, k - 1 : k]
    rms = be.xp.sqrt(ops.row_mean(s_orig * s_orig))
    tie = (sel.tie_atol if sel.tie_atol is not None else spec.tie_rtol * rms) + spec.tie_rtol * abs(kth)
    sc = ops.take(s, ci)
    below = (sc < kth - tie).sum(-1) > 0
    missed = (sc > kth + tie).sum(-1) < (s > kth + tie).sum(-1)
    order = _order_bad(ops, sel, ops.take(s_orig, ci), tie)
    problems = [
        (dup, "repeat an id"),
        (below, "choose an id whose reference score is below the k-th by more than the tie tolerance"),
        (missed, "leave out an id whose reference score is above the k-th by more than the tie tolerance"),
        (order, f"are not in {sel.order} order of the reference scores (ties aside)"),
    ]
    found = [(ops.nonzero_rows(mask), what) for mask, what in problems if mask is not None]
    found = [(f, what) for f, what in found if f[1]]
    bad = dup | below | missed | (order if order is not None else dup)
    bad_rows = int(bad.sum())
    if found:
        (row, _), _ = found[0]
        ids_ref = ops.rows(ops.i64(ref_parts[sel.ids]), dim, k)
        kinds = "; ".join(f"{cnt} of {rows} rows {what}" for (_, cnt), what in found)
        why = (
            f"{kinds} (e.g. row {row}: ids {ci[row].tolist()}, the reference's "
            f"{ids_ref[row].tolist()}; k-th score {float(kth[row, 0] * sign):.6g}, tie tolerance "
            f"{float(tie[row, 0]):.3g})"
        )
        return Aligned(bad_rows, rows, why)
    if sel.values is None:
        return Aligned(0, rows, "")
    return _values_by_rank(ops, spec, cand_parts, ref_parts, s, sc, n, rows)


def _order_bad(ops: _Ops, sel: Selection, sc_orig: Any, tie: Any) -> Any:
    if sel.order == "any" or sc_orig.shape[-1] < 2:
        return None
    step = sc_orig[:, 1:] - sc_orig[:, :-1]
    wrong = step > tie if sel.order == "descending" else step < -tie
    return wrong.sum(-1) > 0


def _values_by_rank(
    ops: _Ops, spec: Spec, cand_parts: list[Any], ref_parts: list[Any], s: Any, sc: Any, n: int, rows: int
) -> Aligned:
    """Candidate and reference values, each row ordered by the reference score of its ids (best first)."""
    sel, k = spec.sel, spec.k
    assert sel.values is not None
    cv = ops.rows(cand_parts[sel.values], sel.dim, k)
    rv = ops.rows(ref_parts[sel.values], sel.dim, k)
    ri = ops.rows(ops.i64(ref_parts[sel.ids]), sel.dim, k)
    if not bool(((ri >= 0) & (ri < n)).all()):
        raise ContractError("the selection reference returned ids out of range", "fix the reference")
    cand = ops.take(cv, ops.argsort_desc(sc))
    refv = ops.take(rv, ops.argsort_desc(ops.take(s, ri)))
    return Aligned(0, rows, "", cand, refv)


def timed_view(sel: Selection | None, out: Any) -> Any:
    """What the timed-output check samples of a selection output: its values sorted along dim (tied
    substitutes have near-equal values, so a correct candidate matches the reference's sorted values);
    None without values (ids alone are not compared under the timer: docs/guard.md). The output itself
    for an elementwise contract."""
    if sel is None:
        return out
    got = parts(out)
    if sel.values is None or len(got) <= sel.values:
        return None
    v = got[sel.values]
    mod = type(v).__module__.split(".")[0]
    if mod == "torch":
        return v.sort(dim=sel.dim).values
    if mod == "numpy":
        import numpy

        return numpy.sort(v, axis=sel.dim)
    return None
