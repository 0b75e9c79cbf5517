"""Loading a task's reference contract and the tolerance it implies.

Default tolerance (documented in docs/guard.md): elementwise |out - ref| <= atol + rtol * |ref| against a
float64 reference, with rtol = 4 (u + u_acc sqrt(max(1, L))): u is the unit roundoff of the declared dtype
(2^-(mantissa bits + 1), a property of the number format: the output's own rounding), u_acc that of the
accumulator (fp32 for 16- and 8-bit formats, else the dtype itself) and L the reduced length the contract
names (`reduction`, e.g. K of a GEMM: the rounding error of a length-L sum grows like sqrt(L) for random
data); atol = rtol x RMS(ref) so entries that cancel to near zero are judged on the output's scale. A
contract's `tolerance` overrides both.
"""

from __future__ import annotations

import importlib
import importlib.util
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpilot.guard.errors import ContractError, ContractLoadError
from kernelpilot.guard.models import Contract, Tolerance
from kernelpilot.roofline.ops import canonical_dtype

# Stored mantissa bits of each float format (IEEE 754 binary64/32/16, bfloat16, OCP FP8 E4M3, TF32).
MANTISSA_BITS: dict[str, int] = {"fp64": 52, "fp32": 23, "tf32": 10, "fp16": 10, "bf16": 7, "fp8": 3}
# Formats a candidate might silently compute in instead of the declared one (`rejected_precision`).
LOWER: dict[str, tuple[str, ...]] = {
    "fp64": ("fp32", "tf32", "bf16"),
    "fp32": ("tf32", "fp16", "bf16"),
    "fp16": ("fp8",),
    "bf16": ("fp8",),
}
TOLERANCE_ULP_FACTOR = 4.0


def unit_roundoff(dtype: str) -> float:
    return 2.0 ** -(MANTISSA_BITS[dtype] + 1)


def float_dtype(dtype: str) -> str:
    d = canonical_dtype(dtype)
    if d not in MANTISSA_BITS:
        raise ContractError(
            f"contract dtype {dtype!r} is not a float format the guard checks",
            f"use one of {', '.join(MANTISSA_BITS)}",
        )
    return d


def reduced_length(contract: Contract, shape: dict[str, int]) -> int:
    if contract.reduction is None:
        return 1
    if contract.reduction not in shape:
        raise ContractError(
            f"contract reduction {contract.reduction!r} is not a key of shape {shape}",
            "name the shape key of the reduced length (e.g. 'k')",
        )
    return shape[contract.reduction]


ACCUMULATOR: dict[str, str] = {
    "fp64": "fp64",
    "fp32": "fp32",
    "tf32": "fp32",
    "fp16": "fp32",
    "bf16": "fp32",
    "fp8": "fp32",
}


def default_rtol(dtype: str, length: int) -> float:
    u, u_acc = unit_roundoff(dtype), unit_roundoff(ACCUMULATOR[dtype])
    return TOLERANCE_ULP_FACTOR * (u + u_acc * math.sqrt(max(1, length)))


def tolerance(contract: Contract, shape: dict[str, int]) -> tuple[Tolerance, str]:
    """The tolerance for one shape and where it came from."""
    if contract.tolerance is not None:
        return contract.tolerance, "contract override"
    d = float_dtype(contract.dtype)
    n = reduced_length(contract, shape)
    rtol = default_rtol(d, n)
    acc = ACCUMULATOR[d]
    return Tolerance(rtol=rtol), (
        f"default: rtol = {TOLERANCE_ULP_FACTOR:g} (u_{d} + u_{acc} sqrt(L)) = {TOLERANCE_ULP_FACTOR:g} x "
        f"(2^-{MANTISSA_BITS[d] + 1} + 2^-{MANTISSA_BITS[acc] + 1} x sqrt({n})) = {rtol:.3g}; "
        "atol = rtol x RMS(reference)"
    )


def load_function(workdir: Path, spec: str, what: str) -> Callable[..., Any]:
    """`file.py:function` under the workdir, typed errors naming the contract field."""
    from kernelpilot.foundation.errors import KernelpilotError
    from kernelpilot.timing.callables import load_factory

    try:
        return load_factory(spec, workdir)
    except KernelpilotError as exc:
        raise ContractLoadError(f"contract {what} {spec!r}: {exc.message}", exc.hint) from exc


def resolve_device(contract: Contract) -> str:
    if contract.device != "auto":
        return contract.device
    if importlib.util.find_spec("torch") is None:
        return "cpu"
    torch: Any = importlib.import_module("torch")
    return "cuda" if torch.cuda.is_available() else "cpu"


class Loaded:
    """The contract's three functions, loaded."""

    def __init__(self, contract: Contract, workdir: Path) -> None:
        self.contract = contract
        self.workdir = workdir
        self.inputs = load_function(workdir, f"{contract.module}:{contract.inputs}", "inputs")
        self.reference = load_function(workdir, f"{contract.module}:{contract.reference}", "reference")
        self.candidate = load_function(workdir, contract.candidate, "candidate")
        self.device = resolve_device(contract)

    def make(self, shape: dict[str, int], seed: int) -> list[Any]:
        return made_inputs(self.inputs, self.contract, self.device, shape, seed)


def made_inputs(
    factory: Callable[..., Any], contract: Contract, device: str, shape: dict[str, int], seed: int
) -> list[Any]:
    """The contract's inputs for a shape and seed, checked; a factory that raises is the contract's error."""
    try:
        made = factory(dict(shape), contract.dtype, seed, device)
    except Exception as exc:  # the contract's own factory failed: typed, names it
        raise ContractError(
            f"contract inputs factory raised {type(exc).__name__}: {exc} (shape {shape}, seed {seed})",
            "fix the inputs factory",
        ) from exc
    if not isinstance(made, (list, tuple)) or not made:
        raise ContractError(
            "the contract inputs factory must return a non-empty list of arrays/tensors",
            "return e.g. [a, b]",
        )
    return list(made)
