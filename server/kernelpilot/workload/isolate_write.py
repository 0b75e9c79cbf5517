"""The text of the files `workload isolate` writes: `bench_<name>.py` (a `make()` factory for `kernelpilot
time`) and `contract_<name>.py` / `.json` (the reference contract of docs/guard.md, "The contract").

Why generated as plain code: a person reads and edits these files (the kernel loop starts from them), so
each recorded fact is a named constant with the trace it came from, the call is the ATen op the trace
recorded, and nothing outside torch is imported.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kernelpilot.workload.isolate_plan import CallPlan, ListArg, TensorArg
from kernelpilot.workload.op_models import OpModel

GUARD_DTYPES = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


@dataclass
class Source:
    """Where the recorded call came from, for the files' docstrings."""

    trace: str
    kernel: str
    us_per_step: float
    launches_per_step: float


def _tuple(v: list[int]) -> str:
    return "(" + ", ".join(str(x) for x in v) + ("," if len(v) == 1 else "") + ")"


def _const(var: str) -> str:
    return var.upper()


WIDTH = 88  # ruff's default line length: the files pass it with or without a project config


def _call(plan: CallPlan) -> str:
    """`return op(args)` on one line, or one argument a line when that is too long (as ruff formats it)."""
    pos = [a.code for a in plan.args if not a.kwarg_only]
    kw = [f"{a.name}={a.code}" for a in plan.args if a.kwarg_only]
    one = f"    return {plan.target}({', '.join(pos + kw)})"
    if len(one) <= WIDTH:
        return one
    return "\n".join([f"    return {plan.target}(", *[f"        {x}," for x in pos + kw], "    )"])


def _doc(text: str, indent: str = "") -> list[str]:
    """A paragraph wrapped to the line length (long kernel names are cut: the trace has them whole)."""
    import textwrap

    text = text if len(text) <= 400 else text[:400] + "…"
    return textwrap.wrap(text, WIDTH - len(indent), initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False)  # fmt: skip


def _inputs(plan: CallPlan) -> list[str]:
    """The variables make_inputs returns, in call order (tensors and tensor lists)."""
    return [a.code for a in plan.args if a.tensor is not None or a.tensors is not None]


def _assign(var: str, fn: str, args: str, suffix: str = "") -> str:
    """`    var = fn(args)suffix`, its arguments on a line of their own when too long (as ruff formats it)."""
    one = f"    {var} = {fn}({args}){suffix}"
    if len(one) <= WIDTH:
        return one
    return f"    {var} = {fn}(\n        {args}\n    ){suffix}"


def _tensor_line(t: TensorArg) -> str:
    c = _const(t.var)
    if t.contiguous:
        return _assign(t.var, "random_tensor", f"{c}_SHAPE, torch.{t.dtype}, g, device")
    return _assign(t.var, "strided_random_tensor", f"{c}_SHAPE, {c}_STRIDE, torch.{t.dtype}, g, device")


def _list_const(plan: CallPlan, lst: ListArg) -> str:
    """The constant of a TensorList's members: shared by every list with the same members (MEMBER_...)."""
    same = [x for x in plan.lists if x.members == lst.members]
    return "MEMBER" if len(same) > 1 else _const(lst.var)


def _constants(plan: CallPlan) -> list[str]:
    lines = []
    for t in plan.tensors:
        c = _const(t.var)
        lines.append(f"{c}_SHAPE = {_tuple(t.dims)}")
        if not t.contiguous and t.strides is not None:
            lines.append(f"{c}_STRIDE = {_tuple(t.strides)}  # recorded layout: a view")
    written: list[ListArg] = []
    for lst in plan.lists:
        if any(w.members == lst.members for w in written):  # one constant for lists of the same members
            continue
        written.append(lst)
        dtypes = sorted({dt for _, _, dt in lst.members})
        lines.append(f"{_list_const(plan, lst)}_SHAPES = [")
        lines += [f"    {_tuple(d)}," for d, _, _ in lst.members]
        lines.append("]")
        lines.append(f"{_list_const(plan, lst)}_DTYPE = torch.{dtypes[0]}")
    return lines


_HELPERS = '''

def random_tensor(shape, dtype, generator, device):
    """Standard normal values (integers: 0 or 1), drawn in fp32, then cast."""
    values = torch.randn(shape, generator=generator, device=device)
    if dtype.is_floating_point or dtype.is_complex:
        return values.to(dtype)
    return (values > 0).to(dtype)


def strided_random_tensor(shape, stride, dtype, generator, device):
    """A tensor with the recorded strides: a view of a storage just large enough."""
    if not all(shape):
        return torch.empty(shape, dtype=dtype, device=device)
    span = 1 + sum((n - 1) * s for n, s in zip(shape, stride, strict=True))
    return random_tensor((span,), dtype, generator, device).as_strided(shape, stride)
'''


def bench_text(plan: CallPlan, src: Source, model: OpModel | None) -> str:
    """bench_<name>.py: the recorded inputs as constants, make_inputs, kernel (the op call) and make."""
    inputs = _inputs(plan)
    body = [_tensor_line(t) for t in plan.tensors]
    for lst in plan.lists:
        c = _list_const(plan, lst)
        comp = f"random_tensor(shape, {c}_DTYPE, g, device) for shape in {c}_SHAPES"
        one = f"    {lst.var} = [{comp}]"
        body.append(one if len(one) <= WIDTH else f"    {lst.var} = [\n        {comp}\n    ]")
    head = [
        '"""Standalone benchmark of one kernel of a PyTorch trace (`kernelpilot workload isolate`).',
        "",
        *_doc(f"Trace: {src.trace}"),
        *_doc(f"Kernel: {src.kernel}"),
        *_doc(
            f"{src.us_per_step:.1f} µs/step in {src.launches_per_step:g} launches/step in the trace.", "  "
        ),
        *_doc(f"Launched by {plan.launching_op}; called here as {plan.target} with the recorded inputs."),
    ]
    if model:
        head += _doc(f"Roofline model: {model.description} ({model.formula}).")
    for n in plan.notes:
        head += _doc(f"Note: {n}")
    lines = [
        *head,
        "",
        "Time it: kernelpilot time <this file>:make, on the GPU the trace ran on.",
        '"""',
        "",
        "import torch",
        "",
        *_doc(f"{plan.op.name} inputs as the trace recorded them (record_shapes):", "# "),
        *_constants(plan),
        "",
        "",
        'def make_inputs(device="cuda", seed=0):',
        '    """The inputs of the recorded call: its shapes, dtypes and strides, random values."""',
        "    g = torch.Generator(device=device).manual_seed(seed)",
        *body,
        f"    return [{', '.join(inputs)}]",
        "",
        "",
        f"def kernel({', '.join(inputs)}):",
        f'    """The recorded call: {plan.op.name} with its recorded arguments."""',
        _call(plan),
        "",
        "",
        "def make(device=None):",
        '    """`kernelpilot time` factory: one call of the recorded op per step."""',
        '    device = device or ("cuda" if torch.cuda.is_available() else "cpu")',
        "    inputs = make_inputs(device)",
        "",
        "    def step():",
        "        return kernel(*inputs)",
        "",
        "    return step",
        _HELPERS.rstrip("\n"),
    ]
    return "\n".join(line for line in lines if line is not None) + "\n"


@dataclass
class ContractShapes:
    """Shape keys of each tensor input's axes, and the sizes of the timed shape and the others."""

    keys: dict[str, list[str]]  # var -> key per axis
    shapes: list[dict[str, int]]
    reduction: str | None


def _keys(plan: CallPlan, model: OpModel | None) -> dict[str, list[str]]:
    """GEMM operands by m, k, n; any other tensor by `<var>_<axis>`."""
    ts = plan.tensors
    if model is not None and model.kind == "gemm" and model.args.get("op") == "gemm" and len(ts) >= 2:
        a, b = ts[-2], ts[-1]
        keys = {a.var: ["m", "k"], b.var: ["k", "n"]}
        for t in ts[:-2]:  # addmm's bias
            keys[t.var] = ["n"] if len(t.dims) == 1 else ["m", "n"][-len(t.dims) :]
        return keys
    return {t.var: [f"{t.var}_{i}" for i in range(len(t.dims))] for t in ts}


def contract_shapes(plan: CallPlan, model: OpModel | None, others: list[list[Any]]) -> ContractShapes:
    """The timed shape (the recorded one) and the other recorded dims of the op that fit the same keys."""
    keys = _keys(plan, model)
    tensor_idx = [i for i, a in enumerate(plan.args) if a.tensor is not None]
    shapes: list[dict[str, int]] = []
    for dims in [[t.dims for t in plan.tensors], *others]:
        shape: dict[str, int] = {}
        ok = len(dims) == len(plan.tensors)
        for t, d in zip(plan.tensors, dims, strict=False):
            if not ok or not isinstance(d, list) or len(d) != len(t.dims):
                ok = False
                break
            for key, size in zip(keys[t.var], d, strict=True):
                if shape.setdefault(key, size) != size or not (isinstance(size, int) and size > 0):
                    ok = False
        if ok and shape and shape not in shapes:
            shapes.append(shape)
    del tensor_idx
    reduction = None
    if model is not None and model.kind == "gemm":
        reduction = "k"
    elif model is not None and model.kind in ("reduction", "normalization", "softmax") and plan.tensors:
        reduction = keys[plan.tensors[0].var][-1]
    return ContractShapes(keys, shapes[:3], reduction)


def _contract_tensor(t: TensorArg, keys: list[str], declared: str) -> str:
    dims = ", ".join(f'shape["{k}"]' for k in keys)
    dtype = "DTYPES[dtype]" if GUARD_DTYPES.get(t.dtype) == declared else f"torch.{t.dtype}"
    order = t.dense_order
    if order is None or order == list(range(len(t.dims))):
        return _assign(t.var, "random_tensor", f"({dims}{',' if len(keys) == 1 else ''}), {dtype}, g, device")
    stored = ", ".join(f'shape["{keys[i]}"]' for i in order)
    back = [order.index(i) for i in range(len(order))]
    args = f"({stored}{',' if len(order) == 1 else ''}), {dtype}, g, device"
    return _assign(t.var, "random_tensor", args, f".permute{_tuple(back)}")


def contract_text(plan: CallPlan, src: Source, cs: ContractShapes, declared: str) -> str:
    """contract_<name>.py: make_inputs(shape, dtype, seed, device) and reference(*inputs) in float64."""
    inputs = _inputs(plan)
    lines = [
        f'"""Reference contract of {plan.op.name} (`kernelpilot workload isolate`).',
        "",
        *_doc(
            f'Recorded in {src.trace}. The contract format is docs/guard.md, "The contract": the reference '
            "is the same op on the float64 copies of the inputs that `kernelpilot eval` passes; a tensor of "
            "another dtype than the declared one keeps its recorded dtype."
        ),
        '"""',
        "",
        "import torch",
        "",
        "DTYPES = {",
        '    "fp64": torch.float64,',
        '    "fp32": torch.float32,',
        '    "fp16": torch.float16,',
        '    "bf16": torch.bfloat16,',
        "}",
        "",
        "",
        "def make_inputs(shape, dtype, seed, device):",
        '    """Inputs of one shape of the contract; values depend on the seed."""',
        "    g = torch.Generator(device=device).manual_seed(seed)",
        *[_contract_tensor(t, cs.keys[t.var], declared) for t in plan.tensors],
        f"    return [{', '.join(inputs)}]",
        "",
        "",
        f"def reference({', '.join(inputs)}):",
        f'    """{plan.op.name} on the inputs as given (float64 copies under `kernelpilot eval`)."""',
        _call(plan),
        _HELPERS.rstrip("\n").split("\n\n\ndef strided_random_tensor")[0],
    ]
    return "\n".join(lines) + "\n"


def contract_json(
    plan: CallPlan, module: str, candidate: str, cs: ContractShapes, declared: str, model: OpModel | None
) -> str:
    doc: dict[str, Any] = {
        "module": module,
        "candidate": candidate,
        "shapes": cs.shapes,
        "dtype": declared,
        "device": "auto",
    }
    if cs.reduction:
        doc["reduction"] = cs.reduction
    if plan.mutable:
        doc["in_place"] = [0]
    if model is not None and model.args.get("op") in _GUARD_ROOFLINE_OPS:
        params = {k: v for k, v in model.args.items() if k != "op"}
        if model.kind == "gemm" and model.args.get("op") == "gemm":
            params = {"m": "m", "n": "n", "k": "k"}
        doc["roofline"] = {"op": model.args["op"], "params": params}
    return json.dumps(doc, indent=2) + "\n"


_GUARD_ROOFLINE_OPS = (
    "gemm",
    "bmm",
    "elementwise",
    "reduction",
    "softmax",
    "layernorm",
    "rmsnorm",
    "attention",
)
