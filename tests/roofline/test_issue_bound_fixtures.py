"""Issue 32's acceptance on the recorded H100 run of device/issue_bound_next.sh (tests/fixtures/roofline/
issue_bound: the cubins Triton compiled, their ncu --set full raw pages with the per-pipe counters, and
issue_bound.json with the launches and `kernelpilot time` figures): the static and the ncu issue floors agree
within 25 %, no measured time is under the floor, and where the issue floor binds the stop target is it.

Three kernels were written issue-bound (gating, row log-sum-exp + entropy, bitonic row sort) and one, the
fused RoPE, binds memory: the floor must pick memory there. A kernel whose files are missing, or whose record
is of an older version of the bench kernel, fails naming what to re-record; nothing is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.roofline.core import analyze
from kernelpilot.roofline.models import RooflineRequest

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "roofline" / "issue_bound"
RUN = json.loads((FIX / "issue_bound.json").read_text()) if (FIX / "issue_bound.json").is_file() else {}
ROWS = {r["name"]: r for r in RUN.get("rows", [])}
# bench name -> (the kernel bench/issue_bound_kernels.py launches now, the floor it was written to hit)
EXPECT = {
    "gating": ("topk_gating_kernel", "issue"),
    "row_lse": ("row_logsumexp_entropy_kernel", "issue"),
    "row_sort": ("row_sort_kernel", "issue"),
    "rope": ("qknorm_rope_kernel", "memory"),
}
RERUN = "re-record with `bash device/issue_bound_next.sh` on an H100 (tests/fixtures/roofline/issue_bound)"


def _row(name: str) -> dict[str, Any]:
    """The record's row for this kernel, its cubin and raw page there, or a failure naming what is missing."""
    kernel = EXPECT[name][0]
    row = ROWS.get(name)
    if row is None:
        pytest.fail(f"{name}: no row in {FIX / 'issue_bound.json'}; {RERUN}")
    if row.get("kernel") != kernel:
        pytest.fail(f"{name}: the record is of {row.get('kernel')}, the bench now runs {kernel}; {RERUN}")
    missing = [p.name for p in (FIX / f"{kernel}.cubin", FIX / f"{name}_raw.csv") if not p.is_file()]
    if missing:
        pytest.fail(f"{name}: missing {', '.join(missing)} in {FIX}; {RERUN}")
    return row


def _analyze(name: str, **extra: Any) -> Any:
    row = _row(name)
    args = dict(row["roofline_op"], gpu=RUN["env"]["device"], grid=row["grid"], block=row["block"])
    args.update(isa=str(FIX / f"{row['kernel']}.cubin"), isa_kernel=f"^{row['kernel']}$")
    args.update(ncu_csv=str(FIX / f"{name}_raw.csv"), ncu_kernel=f"^{row['kernel']}$", **extra)
    return analyze(RooflineRequest.model_validate(args))


@pytest.mark.needs_tool("nvdisasm")
@pytest.mark.parametrize("name", list(EXPECT))
def test_static_and_ncu_issue_floors_agree_within_25_percent(name: str) -> None:
    r = _analyze(name)
    static, measured = (next(f for f in r.issue if f.source == s) for s in ("static", "measured"))
    assert 0.75 <= static.time_us / measured.time_us <= 1.25, (static.what, measured.what)
    # straight-line kernels: every warp issues the whole code object, so the issue totals agree closely
    st = next(p for p in static.pipes if p.pipe == "issue").warp_instructions
    me = next(p for p in measured.pipes if p.pipe == "issue").warp_instructions
    assert 0.9 <= st / me <= 1.1
    assert ROWS[name]["correct"] is True, ROWS[name].get("check")


@pytest.mark.needs_tool("nvdisasm")
@pytest.mark.parametrize("name", list(EXPECT))
def test_no_measured_time_is_under_the_floor_and_the_binding_floor_sets_the_target(name: str) -> None:
    row = _row(name)
    r = _analyze(name, measured_time_us=row["cold_us"])
    assert r.below_floor is None and r.stop.status != "IMPOSSIBLE"
    assert row["cold_us"] >= r.time_floor_us
    assert row["warm_us"] >= (r.issue_time_us or 0.0)  # warm runs from L2: under the memory floor is fine
    assert r.bound == row["bound"]  # the device run's own analysis says the same
    assert r.bound == EXPECT[name][1], f"{name} is {r.bound}-bound, written to be {EXPECT[name][1]}-bound"
    assert r.stop.bound == r.bound
    if r.bound == "issue":
        assert r.issue_time_us is not None and r.issue_time_us > r.memory_time_us
        assert r.stop.target_time_us == pytest.approx(r.issue_time_us / r.target_fraction)
    else:  # memory binds: the issue floor is shown beside it, under it
        assert (r.issue_time_us or 0.0) < r.memory_time_us
