"""`workload isolate`: from one hot kernel of a PyTorch trace to a standalone benchmark and its contract.

Why: the triage names the kernels that hold a step's time, the kernel loop optimizes one kernel given a
`make()` factory and a reference contract; between them a user would parse the raw trace by hand. Here the
ATen op that launched the kernel (by External id, `workload.op_calls`) is called again with the shapes,
dtypes, strides and scalar arguments the trace recorded (`workload.isolate_plan`), written as
`bench_<name>.py` and `contract_<name>.py`/`.json` (`workload.isolate_write`), with the roofline arguments
for `workspace init` where the op has a model (`workload.op_models`). What the trace did not keep is named
with how to capture it. Only PyTorch traces record op arguments: a rocprofv3, nsys or ncu table is refused.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import InputFileError
from kernelpilot.foundation.validation import require_file
from kernelpilot.workload.errors import KernelChoiceError, NotIsolableError
from kernelpilot.workload.models import (
    IsolatedShape,
    WorkloadIsolateRequest,
    WorkloadIsolateResult,
    WorkloadKernel,
    WorkloadResult,
)
from kernelpilot.workload.op_calls import KernelLaunch, OpCall, TraceOps

TABLE_HINT = (
    "record the step with the PyTorch profiler instead: `kernelpilot workload run model.py:make_step "
    "--save-trace trace.json` (record_shapes is on), or torch.profiler.profile(record_shapes=True) and "
    "export_chrome_trace"
)


def _is_trace(path: Path) -> bool:
    """A Chrome trace (gzip too) rather than a workload result JSON: the result has no traceEvents."""
    from kernelpilot.workload.readers.gzipped import head

    start = head(path).lstrip()
    if start[:1] not in (b"{", b"["):
        raise NotIsolableError(
            f"{path} is a table (rocprofv3, nsys or ncu CSV): such traces record no ATen op and no arguments",
            TABLE_HINT,
        )
    return b'"traceEvents"' in start or start[:1] == b"[" or b'"schemaVersion"' in start


def _load_result(path: Path) -> WorkloadResult:
    from pydantic import ValidationError

    from kernelpilot.foundation.readers import read_bytes

    try:
        return WorkloadResult.model_validate_json(read_bytes(path, "workload result", 2**30))
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputFileError(
            f"{path} is not a workload result of this kernelpilot version "
            f"({'.'.join(str(x) for x in err['loc'])}: {err['msg']})",
            "give the trace itself, or read it again with this version: "
            "kernelpilot workload read TRACE --out result.json",
        ) from exc


def _sources(req: WorkloadIsolateRequest) -> tuple[WorkloadResult, Path]:
    """The workload result (read from the trace when a trace is given) and the trace path."""
    from kernelpilot.workload.core import read_workload
    from kernelpilot.workload.models import WorkloadReadRequest

    p = require_file(req.path, "input", "give a PyTorch trace or a workload result JSON")
    if _is_trace(p):
        return read_workload(WorkloadReadRequest(path=str(p))), p
    res = _load_result(p)
    if res.format != "kineto":
        raise NotIsolableError(
            f"{req.path} was read from a {res.format} table: such traces record no ATen op and no arguments",
            TABLE_HINT,
        )
    for cand in (res.trace_path, res.source):
        if cand and Path(cand).is_file():
            return res, Path(cand)
    raise InputFileError(
        f"the trace of {req.path} ({res.trace_path or res.source}) is not there any more",
        "give the trace itself (workload run --save-trace keeps it)",
    )


def choose_kernel(res: WorkloadResult, which: str) -> tuple[int, WorkloadKernel]:
    """The row `which` names: its 1-based number in the table, else the one row whose name contains it."""
    rows = res.kernels
    if which.strip().isdigit():
        n = int(which)
        if not 1 <= n <= len(rows):
            raise KernelChoiceError(
                f"--kernel {n}: the workload has {len(rows)} kernel rows",
                f"give a row number from 1 to {len(rows)} (the # column of `kernelpilot workload read`)",
            )
        return n, rows[n - 1]
    low = which.lower()
    exact = [(i, k) for i, k in enumerate(rows, 1) if low in (k.name.lower(), k.short_name.lower())]
    hits = exact or [
        (i, k) for i, k in enumerate(rows, 1) if low in k.name.lower() or low in k.short_name.lower()
    ]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise KernelChoiceError(
            f"--kernel {which!r} matches no kernel of the workload",
            "give a row number or a part of a kernel name from `kernelpilot workload read`",
        )
    listed = "; ".join(f"{i}: {k.short_name}" for i, k in hits[:6])
    raise KernelChoiceError(
        f"--kernel {which!r} matches {len(hits)} kernel rows ({listed}{'; ...' if len(hits) > 6 else ''})",
        "give the row number, or more of the name",
    )


def _not_graph(k: WorkloadKernel) -> None:
    if k.graph_launched:
        raise NotIsolableError(
            f"{k.short_name} was launched by a CUDA/HIP graph replay: the trace records the replay, not the "
            "ops captured into the graph",
            "record the step eagerly (without the graph) under "
            "torch.profiler.profile(record_shapes=True) and isolate from that trace",
        )


def _why_no_op(kernel: str) -> NotIsolableError:
    if kernel.startswith("triton_"):
        return NotIsolableError(
            f"{kernel} is a Triton kernel generated by torch.compile: no ATen op launched it",
            "its source is in the inductor cache (TORCHINDUCTOR_CACHE_DIR, default "
            "/tmp/torchinductor_$USER): grep the kernel name there and start from that file",
        )
    return NotIsolableError(
        f"{kernel}: no ATen op is recorded around its launches (a custom extension or a library call)",
        "isolate it from its own source, or record the trace with record_shapes=True around the op that "
        "launches it",
    )


def _signature(op: OpCall) -> str:
    return json.dumps(op.dims, separators=(",", ":"))


def _pick(k: WorkloadKernel, launches: list[KernelLaunch]) -> tuple[OpCall, list[IsolatedShape]]:
    """The op call of the row's signature (the row's shapes, else the one with most time), all signatures."""
    by: dict[tuple[str, str, str], list[KernelLaunch]] = defaultdict(list)
    for la in launches:
        if la.op is not None:
            by[la.op.signature()].append(la)
    if not by:
        raise _why_no_op(k.name)
    ranked = sorted(by.items(), key=lambda kv: -sum(x.dur_us for x in kv[1]))
    shapes = [
        IsolatedShape(op=key[0], dims=json.loads(key[1]), types=json.loads(key[2]), launches=len(v),
                      us=sum(x.dur_us for x in v))
        for key, v in ranked
    ]  # fmt: skip
    for (key, v), shape in zip(ranked, shapes, strict=True):
        if k.input_shapes and key[1] == k.input_shapes and (not k.shape_op or k.shape_op == key[0]):
            return _op_of(v), shape_first(shapes, shape)
    return _op_of(ranked[0][1]), shapes


def _op_of(v: list[KernelLaunch]) -> OpCall:
    op = v[0].op
    assert op is not None
    return op


def shape_first(shapes: list[IsolatedShape], first: IsolatedShape) -> list[IsolatedShape]:
    return [first, *[s for s in shapes if s is not first]]


def _other_dims(trace: TraceOps, called: OpCall, tensor_idx: list[int]) -> list[list[Any]]:
    """The tensor inputs' dims of the other calls of the same op with the same input types, most frequent
    first (the contract's further shapes)."""
    counts: dict[str, int] = defaultdict(int)
    for op in trace.ops:
        if op.name == called.name and op.types == called.types and op.dims != called.dims:
            counts[json.dumps([op.dims[i] if i < len(op.dims) else None for i in tensor_idx])] += 1
    return [json.loads(x) for x in sorted(counts, key=lambda d: -counts[d])]


def _slug(op: str, dims: list[Any]) -> str:
    """bench_<op>_<dims of each tensor input>, e.g. bench_mm_8x1024_1024x2816."""
    base = re.sub(r"[^a-z0-9]+", "_", op.split("::")[-1].lower()).strip("_") or "op"
    tensors = ["x".join(str(x) for x in d) for d in dims if isinstance(d, list) and d]
    return (base + "".join(f"_{t}" for t in tensors))[:80]


def isolate_workload(req: WorkloadIsolateRequest) -> WorkloadIsolateResult:
    """Write bench_<name>.py and the contract of one kernel row; see the module docstring."""
    from kernelpilot.workload.op_calls import read_trace_ops

    res, trace_path = _sources(req)
    row, k = choose_kernel(res, req.kernel)
    _not_graph(k)
    trace = read_trace_ops(trace_path)
    if not trace.record_shapes:
        raise NotIsolableError(
            f"{trace_path} recorded no op shapes (record_shapes was off)",
            "record it again with torch.profiler.profile(record_shapes=True), or `kernelpilot workload run "
            "--save-trace`, which turns it on",
        )
    return isolate_row(req, res, trace_path, trace, row)


def isolate_row(
    req: WorkloadIsolateRequest, res: WorkloadResult, trace_path: Path, trace: TraceOps, row: int
) -> WorkloadIsolateResult:
    """One row of a workload already read (the hot set of a trace is isolated from one read)."""
    from kernelpilot.workload.isolate_plan import plan_call

    k = res.kernels[row - 1]
    _not_graph(k)
    op, shapes = _pick(k, trace.by_kernel.get(k.name, []))
    plan = plan_call(op, trace.ops, k.name)
    return _write(req, res, row, k, trace_path, trace, plan, shapes)


def _write(
    req: WorkloadIsolateRequest,
    res: WorkloadResult,
    row: int,
    k: WorkloadKernel,
    trace_path: Path,
    trace: TraceOps,
    plan: Any,
    shapes: list[IsolatedShape],
) -> WorkloadIsolateResult:
    """The files, the roofline arguments and the notes of what was not recovered."""
    from kernelpilot.workload import isolate_write as w
    from kernelpilot.workload.op_models import model_of

    model = model_of(plan.op.name, plan.op.dims, plan.op.types, plan.op.concrete)
    name = req.name or _slug(plan.op.name, plan.op.dims)
    out = Path(req.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    src = w.Source(str(trace_path), k.name, k.us_per_step, k.launches_per_step)
    bench = out / f"bench_{name}.py"
    write_text_atomic(bench, w.bench_text(plan, src, model))
    notes = list(plan.notes)
    if model is not None and model.note:
        notes.append(f"roofline model: {model.note}")
    if model is None:
        notes.append(
            f"no roofline model for {plan.op.name} in the catalogue: `workspace init` takes "
            "--flops/--bytes-moved"
        )
    contract = module = None
    cs_shapes: list[dict[str, int]] = []
    declared = w.GUARD_DTYPES.get(plan.tensors[0].dtype) if plan.tensors else None
    if plan.lists:
        notes.append("no contract: a TensorList op's members have no shape keys in the contract format")
    elif declared is None:
        notes.append("no contract: the op has no float tensor input of a dtype the contract format declares")
    else:
        idx = [i for i, a in enumerate(plan.args) if a.tensor is not None]
        cs = w.contract_shapes(plan, model, _other_dims(trace, plan.op, idx))
        module = str(out / f"contract_{name}.py")
        contract = str(out / f"contract_{name}.json")
        write_text_atomic(Path(module), w.contract_text(plan, src, cs, declared))
        write_text_atomic(
            Path(contract),
            w.contract_json(plan, f"contract_{name}.py", f"bench_{name}.py:kernel", cs, declared, model),
        )
        cs_shapes = cs.shapes
    roof = None
    if model is not None:
        roof = {**model.args, "dtype": model.dtype}
        if model.out_dtype != model.dtype:
            roof["out_dtype"] = model.out_dtype
    return WorkloadIsolateResult(
        kernel=k.short_name,
        row=row,
        trace=str(trace_path),
        launching_op=plan.launching_op,
        called_op=plan.target,
        called_dims=plan.op.dims,
        called_types=plan.op.types,
        shape=shapes[0],
        other_shapes=shapes[1:],
        bench=str(bench),
        contract=contract,
        contract_module=module,
        contract_shapes=cs_shapes,
        roofline_args=roof,
        not_recovered=notes,
        next_commands=_next(bench, contract, name, k, res, roof, req.gpu),
    )


def _next(
    bench: Path, contract: str | None, name: str, k: WorkloadKernel, res: WorkloadResult,
    roof: dict[str, Any] | None, gpu: str | None,
) -> list[str]:  # fmt: skip
    """Time it, guard it, then the workspace with the roofline arguments."""
    out = [f"kernelpilot time {bench}:make"]
    if contract:
        out.append(
            f"kernelpilot task create --name {name} --contract {contract} --allowed-file {bench.name} "
            f"(then kernelpilot eval --refresh-baseline)"
        )
    if roof is not None:
        out.append(
            f"kernelpilot workspace init {name} --kernel {bench} --platform '{gpu or res.gpu or '<gpu>'}' "
            f"--framework pytorch --roofline-args '{json.dumps(roof)}' "
            f"--goal 'cut {k.short_name} below {k.launch.median_us:.2f} µs per launch'"
        )
    return out
