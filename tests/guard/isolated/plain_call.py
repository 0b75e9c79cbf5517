"""Calls one corpus case plainly (no judge) and says whether every output matches its contract's reference.

Run by `test_corpus_shape.py` as `python plain_call.py CASE_PY FUNCTION CONTRACT_JSON`, one fresh interpreter
per case: many attacks replace torch functions, install dispatch modes or scan the garbage collector when
imported, and must neither leak into the test process nor into each other. Prints one JSON line,
`{"ok": bool, "failures": [...], "calls": n}`.

What "plainly" means: the contract's inputs for seeds 0, 1 and 987654321 on every shape, their float64
references computed *before* the case is imported (a case that bends torch's float64 ops cannot bend them),
then the case called on fresh copies of each set, twice on the same tensors, and once after new values
were written into those tensors with `Tensor.copy_` (a memo keyed on the tensors must see them). Each output
is compared at once (a case may return the same buffer every call) with the contract's tolerance, or the
default tolerance of docs/guard.md ("Default tolerance"), widened 2x: a plain call is judged loosely, the
judge's own checks are strict.
"""

import importlib.util
import json
import math
import sys
from pathlib import Path

import torch

SEEDS = (0, 1, 987654321)
LOOSE = 2.0
DT = {"fp64": torch.float64, "fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
UNIT = {"fp64": 2.0**-53, "fp32": 2.0**-24, "fp16": 2.0**-11, "bf16": 2.0**-8}


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def tolerance(contract: dict, shape: dict) -> tuple[float, float | None]:
    """(rtol, atol) where atol None means rtol x RMS(ref), the default of docs/guard.md."""
    if contract.get("tolerance"):
        return contract["tolerance"]["rtol"], contract["tolerance"]["atol"]
    u = UNIT[contract["dtype"]]
    u_acc = 2.0**-24 if contract["dtype"] in ("fp16", "bf16") else u
    length = shape.get(contract["reduction"], 1) if contract.get("reduction") else 1
    return 4 * (u + u_acc * math.sqrt(max(1, length))), None


def reference_of(module, inputs: list) -> torch.Tensor:
    return module.reference(*[t.double() if t.is_floating_point() else t.clone() for t in inputs])


def mismatch(out: object, ref: torch.Tensor, contract: dict, shape: dict) -> str | None:
    """Why `out` is not the reference's answer, or None."""
    if type(out) is not torch.Tensor:
        return f"returned {type(out).__name__}, not a plain torch.Tensor"
    want = DT[contract["dtype"]] if ref.is_floating_point() else ref.dtype
    if out.dtype != want or tuple(out.shape) != tuple(ref.shape):
        return f"returned {out.dtype} {tuple(out.shape)}, want {want} {tuple(ref.shape)}"
    if not ref.is_floating_point():
        return None if torch.equal(out, ref) else "integer output differs from the reference"
    rtol, atol = tolerance(contract, shape)
    ref_rms = ref.pow(2).mean().sqrt().item()
    atol = rtol * ref_rms if atol is None else atol
    err = (out.double() - ref).abs()
    bound = LOOSE * (atol + rtol * ref.abs())
    if bool((err <= bound).all()):
        return None
    return f"max error {err.max().item():.3g} beyond {LOOSE}x tolerance (rtol {rtol:.3g}, atol {atol:.3g})"


def main(case_path: str, function: str, contract_path: str) -> int:
    contract_file = Path(contract_path)
    contract = json.loads(contract_file.read_text())
    cmod = load(contract_file.parent / contract["module"], "plain_call_contract")
    make = getattr(cmod, contract.get("inputs") or "make_inputs")
    sets = {}
    for i, shape in enumerate(contract["shapes"]):
        for seed in SEEDS:
            inputs = make(shape, contract["dtype"], seed, "cpu")
            sets[i, seed] = (inputs, reference_of(cmod, inputs))
    fn = getattr(load(Path(case_path), "kernel"), function)
    failures: list[str] = []
    calls = 0

    def check(out: object, i: int, seed: int, step: str) -> None:
        why = mismatch(out, sets[i, seed][1], contract, contract["shapes"][i])
        if why:
            failures.append(f"shape {contract['shapes'][i]} seed {seed} {step}: {why}")

    for i in range(len(contract["shapes"])):
        for seed in SEEDS:
            check(fn(*[t.clone() for t in sets[i, seed][0]]), i, seed, "fresh copy")
            calls += 1
        same = [t.clone() for t in sets[i, SEEDS[0]][0]]
        for step in ("same tensors, 1st call", "same tensors, 2nd call"):
            check(fn(*same), i, SEEDS[0], step)
            calls += 1
        for t, new in zip(same, sets[i, SEEDS[2]][0], strict=True):
            t.copy_(new)
        check(fn(*same), i, SEEDS[2], "new values copied into the same tensors")
        calls += 1
    print(json.dumps({"ok": not failures, "failures": failures, "calls": calls}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
