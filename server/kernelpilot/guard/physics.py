"""Physics: a candidate time against the roofline floor of its timed shape, from cited peaks only.

floor = max(bytes / peak bandwidth, FLOPs / peak compute) with the datasheet peaks of the wiki
(`roofline.core.analyze`, basis spec; FLOPs and bytes counted by `roofline.ops` from the contract's first
shape). A time under the floor is impossible: `rejected_impossible`, with the arithmetic and the citations
(`<metric>: <value> <unit> <- <path>:L<line>`). The attainable roof uses the wiki's measured ceilings where
it has them (`## Measured` lines: copy bandwidth, matmul throughput); a time within 1/0.95 of it is flagged
for review, not rejected. A GPU or metric the wiki does not know (UNKNOWN) skips the check and says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError, UnknownSpecError
from kernelpilot.guard.models import Contract, PhysicsCheck, Rejection, RooflineSpec

FLAG_SHARE = 0.95  # share of the attainable roof beyond which a time is flagged for review


def _param(value: int | float | bool | str, shape: dict[str, int]) -> int | float | bool:
    if not isinstance(value, str):
        return value
    out = 1
    for key in value.split("*"):
        key = key.strip()
        if key not in shape:
            from kernelpilot.guard.errors import ContractError

            raise ContractError(
                f"contract roofline parameter {value!r} names {key!r}, not a key of shape {shape}",
                "use shape keys joined by '*' or a number",
            )
        out *= shape[key]
    return out


def roofline_request(spec: RooflineSpec, dtype: str, shape: dict[str, int], gpu: str, **kw: Any) -> Any:
    from kernelpilot.roofline.models import RooflineRequest

    params = {k: _param(v, shape) for k, v in spec.params.items()}
    return RooflineRequest(gpu=gpu, op=spec.op, dtype=dtype, **params, **kw)


def _skip(why: str, time_us: float) -> PhysicsCheck:
    return PhysicsCheck(checked=False, skipped_why=why, time_us=time_us)


def _attainable(
    spec: RooflineSpec, dtype: str, shape: dict[str, int], gpu: str, wiki: Any, floor: Any
) -> tuple[float, list[str], str]:
    """(attainable time µs, citations, how): measured ceilings where the wiki has them, else the floor."""
    from kernelpilot.roofline.core import analyze

    try:
        res = analyze(roofline_request(spec, dtype, shape, gpu, basis="measured"), wiki)
        cites = [res.compute_peak.citation(), res.memory_peak.citation()]
        return res.time_floor_us, cites, "measured ceilings"
    except KernelpilotError:
        pass  # vector ops have no measured compute ceiling; a GPU may have no measured lines: below
    bw = wiki.get(floor.gpu_id, "measured_copy_bandwidth_tb_s")
    if bw is None:
        return floor.time_floor_us, [], "no measured ceilings in the wiki: the attainable roof is the floor"
    mem_us = floor.bytes / (bw.number() * 1e12) * 1e6
    return max(mem_us, floor.compute_time_us), [bw.citation()], "measured copy bandwidth, spec compute"


def check(
    contract: Contract, time_us: float, gpu: str | None, wiki_dirs: list[str] | None = None
) -> PhysicsCheck:
    """The physics check of one timed figure (µs) on one GPU (a name the wiki resolves)."""
    spec = contract.roofline
    if spec is None:
        return _skip("the contract declares no roofline op: physics not checked", time_us)
    if not gpu:
        return _skip("no GPU: physics not checked (CPU timing)", time_us)
    from kernelpilot.roofline.core import analyze
    from kernelpilot.wiki.core import load_wiki

    wiki = load_wiki([Path(d) for d in wiki_dirs or []])
    shape = contract.shapes[0]
    try:
        floor = analyze(roofline_request(spec, contract.dtype, shape, gpu), wiki)
    except UnknownSpecError as exc:
        return _skip(f"{exc.message}: physics not checked", time_us)
    attain_us, attain_cites, how = _attainable(spec, contract.dtype, shape, gpu, wiki, floor)
    cites = [floor.compute_peak.citation(), floor.memory_peak.citation(), *attain_cites]
    arith = (
        f"{floor.op}: {floor.flops:.4g} FLOP, {floor.bytes:.4g} B; floor = max({floor.bytes:.4g} B / "
        f"{floor.memory_peak.number():g} {floor.memory_peak.unit} = {floor.memory_time_us:.4g} us, "
        f"{floor.flops:.4g} FLOP / {floor.compute_peak.number():g} {floor.compute_peak.unit} = "
        f"{floor.compute_time_us:.4g} us) = {floor.time_floor_us:.4g} us; attainable ({how}) "
        f"{attain_us:.4g} us; measured {time_us:.4g} us"
    )
    out = PhysicsCheck(
        checked=True,
        gpu_id=floor.gpu_id,
        time_us=time_us,
        floor_us=floor.time_floor_us,
        attainable_us=attain_us,
        arithmetic=arith,
        citations=cites,
    )
    if time_us < floor.time_floor_us:
        out.rejection = Rejection(
            check="physics",
            status="rejected_impossible",
            evidence=f"faster than the roofline floor: {arith}; cited: "
            + "; ".join(cites[:2])
            + "; IMPOSSIBLE: check the timing, then the contract's roofline op and its params, then the "
            "GPU named",
            numbers={"time_us": time_us, "floor_us": floor.time_floor_us},
        )
    elif attain_us / time_us > FLAG_SHARE:
        out.flagged = True
    return out
