"""Which call reproduces a kernel's launch: the ATen op, its overload and each argument's value or tensor.

Why torch: the profiler records every schema argument positionally (keyword-only ones too) and names no
overload; the op's schemas (`torch._C._jit_get_schemas_for_operator`) say which overload takes the recorded
types and which arguments are keyword-only, so the written call is the one the trace recorded. Values the
trace did not keep (a TensorList's members, a list of Python floats, a wrapped scalar) are recovered where
the same trace shows them (a list op's own allocations) or substituted and said so in `CallPlan.notes`.
"""

from __future__ import annotations

import json
import keyword
import math
import re
from dataclasses import dataclass, field
from typing import Any

from kernelpilot.workload.errors import NotIsolableError
from kernelpilot.workload.op_calls import SCALAR_TYPES, TENSOR_TYPES, OpCall

# backend-private ops (no CPU kernel, arguments a caller computes): the factory calls their public caller,
# which dispatches to them on the same device and backend settings
_PRIVATE = re.compile(
    r"^aten::(?:_cudnn|cudnn_|miopen|_flash_attention|_efficient_attention|_scaled_dot_product_(?:cudnn|flash|efficient))"
)
_LIST_SOURCES = re.compile(r"^aten::_foreach_[a-z0-9]+$")  # out-of-place list ops allocate each member


@dataclass
class TensorArg:
    """One tensor input as recorded: its variable name, dims, strides and torch dtype attribute."""

    var: str
    dims: list[int]
    strides: list[int] | None
    dtype: str

    @property
    def dense_order(self) -> list[int] | None:
        """Axes outermost first when the tensor is a permutation of a contiguous one (else None)."""
        if self.strides is None:
            return list(range(len(self.dims)))
        strides = self.strides
        order = sorted(range(len(self.dims)), key=lambda i: (-strides[i], i))
        expect = 1
        for i in reversed(order):
            if self.dims[i] != 1 and strides[i] != expect:
                return None
            expect *= self.dims[i]
        return order

    @property
    def contiguous(self) -> bool:
        return self.dense_order == list(range(len(self.dims)))


@dataclass
class ListArg:
    """A TensorList: its members' (dims, strides, dtype), recovered from allocations in the trace."""

    var: str
    members: list[tuple[list[int], list[int], str]]


@dataclass
class Arg:
    name: str
    kwarg_only: bool
    code: str  # the Python expression passed
    tensor: TensorArg | None = None
    tensors: ListArg | None = None


@dataclass
class CallPlan:
    """The call that reproduces the launching op, and what the trace could not give."""

    op: OpCall  # the op called (the launching op, or its public caller)
    launching_op: str
    overload: str
    args: list[Arg]
    mutable: bool
    notes: list[str] = field(default_factory=list)

    @property
    def tensors(self) -> list[TensorArg]:
        return [a.tensor for a in self.args if a.tensor is not None]

    @property
    def lists(self) -> list[ListArg]:
        return [a.tensors for a in self.args if a.tensors is not None]

    @property
    def target(self) -> str:
        return f"torch.ops.aten.{self.op.name.split('::', 1)[1]}.{self.overload or 'default'}"


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise NotIsolableError(
            "`workload isolate` reads the op's schema from PyTorch, and `import torch` failed",
            "run it where PyTorch is installed (`pip install torch`; the CPU wheel is enough)",
        ) from exc
    return torch


def public_op(op: OpCall) -> tuple[OpCall, str | None]:
    """The op to call: the launching op, or its closest caller that is not backend-private."""
    cur: OpCall | None = op
    while cur is not None and _PRIVATE.match(cur.name):
        cur = cur.parent
    if cur is None or cur is op:
        return op, None
    return cur, (
        f"{op.name} (the launching op) is backend-private; the factory calls its caller {cur.name} with the "
        f"recorded arguments, which dispatches to it on the same GPU and backend settings"
    )


# recorded type -> schema types it can be; '' (not recorded) handled in `_fits`
_SCALAR_SCHEMA = re.compile(r"^(?:Optional\[)?(?:number|int|float|bool|SymInt|complex)\]?$")
_LIST_SCHEMA = re.compile(r"^(?:Optional\[)?List\[(?:int|SymInt|number|float|bool)\]\]?$")


def _fits(recorded: str, schema_type: str, scalar_list: bool = False) -> int:
    """2: the recorded type is this schema type; 1: it can stand for it with a substitute; 0: it cannot.
    An unrecorded argument ('') is a list of numbers when the kernel's name says so (`scalar_list`: a
    foreach kernel's `...ScalarListFunctor` is the overload taking one Python float per member)."""
    optional = schema_type.startswith("Optional[")
    if recorded in TENSOR_TYPES:
        return 2 if schema_type in ("Tensor", "Optional[Tensor]") else 0
    if recorded == "Scalar":
        return 2 if _SCALAR_SCHEMA.match(schema_type) else 0
    if recorded == "ScalarList":
        return 2 if _LIST_SCHEMA.match(schema_type) else 0
    if recorded == "TensorList":
        return 2 if schema_type in ("List[Tensor]", "List[Optional[Tensor]]") else 0
    if recorded == "":
        if optional:
            return 2
        if _LIST_SCHEMA.match(schema_type):
            return 2 if scalar_list else 1
        return 1 if _SCALAR_SCHEMA.match(schema_type) else 0
    return 1 if schema_type == "str" else 0


def _schema(torch: Any, op: OpCall, scalar_list: bool) -> Any:
    """The overload whose arguments take the recorded types best (out= variants left out)."""
    try:
        schemas = torch._C._jit_get_schemas_for_operator(op.name)
    except RuntimeError:
        schemas = []
    best, score = None, -1
    for s in schemas:
        args = list(s.arguments)
        if s.overload_name.endswith("out") or len(args) != len(op.types):
            continue
        fits = [_fits(t, str(a.type), scalar_list) for t, a in zip(op.types, args, strict=True)]
        if 0 in fits:
            continue
        if sum(fits) > score:
            best, score = s, sum(fits)
    if best is None:
        raise NotIsolableError(
            f"no schema of {op.name} takes the {len(op.types)} recorded inputs {op.types}",
            "a custom or Triton op has no ATen schema: isolate it from its own source (for "
            "torch.compile, the generated kernel is in the inductor cache, TORCHINDUCTOR_CACHE_DIR or "
            "/tmp/torchinductor_$USER)",
        )
    return best


def _var(name: str, taken: set[str]) -> str:
    base = {"self": "x", "input": "x"}.get(name, name)
    base = base + "_" if keyword.iskeyword(base) else base
    var, n = base, 2
    while var in taken:
        var, n = f"{base}{n}", n + 1
    taken.add(var)
    return var


def _number(text: str) -> str:
    if text in ("True", "False"):
        return text
    try:
        value = float(text)
    except ValueError:
        return repr(text)
    if math.isfinite(value) and value == int(value) and "." not in text and "e" not in text.lower():
        return str(int(value))
    return repr(value)


def _scalar(arg: Any, text: str) -> str:
    """A recorded scalar as Python: dtypes by name, bools, ints and floats as they print."""
    stype = str(arg.type)
    if arg.name == "dtype" and text.lstrip("-").isdigit():
        dt = SCALAR_TYPES.get(int(text))
        return f"torch.{dt}" if dt else text
    if "bool" in stype:
        return "True" if text in ("True", "1") else "False"
    if "float" in stype:
        return repr(float(text))
    if "int" in stype or "SymInt" in stype:
        return str(int(float(text)))
    return _number(text)


@dataclass
class _Ctx:
    op: OpCall
    notes: list[str]
    all_ops: list[OpCall]
    taken: set[str] = field(default_factory=set)
    list_length: int = 0


def _tensor_arg(ctx: _Ctx, i: int, a: Any, rec_type: str) -> Arg:
    dims = ctx.op.dims[i] if i < len(ctx.op.dims) and isinstance(ctx.op.dims[i], list) else None
    if dims is None or not all(type(d) is int and d >= 0 for d in dims):
        raise NotIsolableError(
            f"{ctx.op.name}: input {i} ({a.name}) is a tensor whose dims the trace did not record",
            "record the trace with torch.profiler.profile(record_shapes=True)",
        )
    st = ctx.op.strides[i] if i < len(ctx.op.strides) else None
    strides = (
        st if isinstance(st, list) and len(st) == len(dims) and all(type(s) is int for s in st) else None
    )
    t = TensorArg(_var(a.name, ctx.taken), list(dims), strides, TENSOR_TYPES[rec_type])
    if not dims and i < len(ctx.op.concrete) and ctx.op.concrete[i] == "":
        ctx.notes.append(
            f"{t.var}: a 0-dim {t.dtype} tensor (a wrapped Python scalar); its value is not recorded, "
            "a random one is used"
        )
    return Arg(a.name, bool(a.kwarg_only), t.var, tensor=t)


def _list_arg(ctx: _Ctx, a: Any) -> Arg:
    members = recover_list(ctx.op, ctx.all_ops)
    if members is None:
        raise NotIsolableError(
            f"{ctx.op.name} takes a TensorList ({a.name}); record_shapes keeps no member's shape and no list "
            "op in the trace allocated one",
            "record the step with torch.profiler.ExecutionTraceObserver too, which keeps each member's shape",
        )
    src, shapes = members
    ctx.list_length = len(shapes)
    var = _var(a.name, ctx.taken)
    lst = ListArg(var, shapes)
    if not ctx.notes or "TensorList" not in " ".join(ctx.notes):
        ctx.notes.append(
            f"TensorList members: record_shapes keeps none; the {len(shapes)} shapes come from the "
            f"allocations of {src.name} at ts {src.ts_us:.0f} µs in the same trace (torch.optim's foreach "
            "step runs every list op over the same parameters)"
        )
    return Arg(a.name, bool(a.kwarg_only), var, tensors=lst)


def _other_arg(ctx: _Ctx, i: int, a: Any, rec_type: str) -> Arg:
    text = ctx.op.concrete[i] if i < len(ctx.op.concrete) else ""
    stype = str(a.type)
    kw = bool(a.kwarg_only)
    if rec_type == "ScalarList" or (text.startswith("[") and _LIST_SCHEMA.match(stype)):
        values = json.loads(text) if text else []
        return Arg(a.name, kw, repr([_scalar_value(v) for v in values]))
    if rec_type == "" and text == "":
        if stype.startswith("Optional["):
            return Arg(a.name, kw, "None")
        n = ctx.list_length or 1
        code = f"[1.0] * {n}" if _LIST_SCHEMA.match(stype) else "1.0"
        ctx.notes.append(f"{a.name}: not recorded (a list of Python floats or a scalar); {code} is used")
        return Arg(a.name, kw, code)
    return Arg(a.name, kw, _scalar(a, text))


def _scalar_value(v: Any) -> Any:
    return v if isinstance(v, (int, float, bool)) else str(v)


def plan_call(op: OpCall, all_ops: list[OpCall], kernel: str = "") -> CallPlan:
    """The call of the op that launched `kernel` (or of its public caller), argument by argument."""
    torch = _torch()
    called, note = public_op(op)
    if not called.recorded:
        raise NotIsolableError(
            f"{called.name}: the trace recorded none of its inputs",
            "record the trace with torch.profiler.profile(record_shapes=True)",
        )
    schema = _schema(torch, called, "ScalarList" in kernel)
    ctx = _Ctx(called, [note] if note else [], all_ops)
    args = []
    for i, (a, rec) in enumerate(zip(schema.arguments, called.types, strict=True)):
        if rec in TENSOR_TYPES:
            args.append(_tensor_arg(ctx, i, a, rec))
        elif rec == "TensorList":
            args.append(_list_arg(ctx, a))
        else:
            args.append(_other_arg(ctx, i, a, rec))
    mutable = bool(schema.is_mutable) or called.name.endswith("_")
    return CallPlan(called, op.name, schema.overload_name, args, mutable, ctx.notes)


def _allocations(op: OpCall) -> list[tuple[list[int], list[int], str]]:
    """(dims, strides, dtype) of each `aten::empty_strided` directly inside `op`, from its concrete args."""
    out = []
    for child in op.children:
        if child.name != "aten::empty_strided" or len(child.concrete) < 3:
            continue
        try:
            dims, strides = json.loads(child.concrete[0]), json.loads(child.concrete[1])
            dtype = SCALAR_TYPES.get(int(child.concrete[2]))
        except (ValueError, TypeError):
            continue
        if dtype and isinstance(dims, list) and isinstance(strides, list):
            out.append((dims, strides, dtype))
    return out


def recover_list(
    op: OpCall, ops: list[OpCall]
) -> tuple[OpCall, list[tuple[list[int], list[int], str]]] | None:
    """The members of a list op's TensorList: the allocations of an out-of-place list op (its own, else the
    closest in time on its thread), each member's dims, strides and dtype."""
    own = _allocations(op)
    if own:
        return op, own
    tid = str(op.tid)
    found = [
        (abs(s.ts_us - op.ts_us), s)
        for s in ops
        if s is not op and str(s.tid) == tid and _LIST_SOURCES.match(s.name) and _allocations(s)
    ]
    if not found:
        return None
    src = min(found, key=lambda x: x[0])[1]
    return src, _allocations(src)
