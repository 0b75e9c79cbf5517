"""The contract as the judge loads it: the inputs factory and the reference, never the candidate.

The module is loaded from the committed tree (`JudgeRequest.contract_root`); any import of a file the
agent may edit (the task's allowed files, under any side's root) is refused for the judge's whole life, so
a contract that imports the candidate's module cannot carry candidate code into the judge. Input values
come from the factory called with a secret seed per call (`fresh_seed`: OS randomness), so nothing the
candidate has seen predicts them.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelpilot.guard import contract as cmod
from kernelpilot.guard.errors import ContractError
from kernelpilot.guard.models import Contract


def fresh_seed() -> int:
    return secrets.randbits(63)


class _Refuse(importlib.abc.MetaPathFinder):
    """Refuses to import a module whose source is one of the agent's files."""

    def __init__(self, blocked: set[Path]) -> None:
        self.blocked = blocked

    def find_spec(self, name: str, path: Sequence[str] | None, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = getattr(spec, "origin", None)
        if origin and Path(origin).resolve() in self.blocked:
            raise ContractError(
                f"the contract imports {name!r} ({origin}), a file the agent may edit",
                "the judge never runs candidate code: keep the inputs factory and the reference in files "
                "outside the task's allowed files",
            )
        return None


def refuse_agent_files(roots: list[Path], allowed: list[str]) -> None:
    blocked = {(r / f).resolve() for r in roots for f in allowed}
    sys.meta_path.insert(0, _Refuse(blocked))


class JudgeContract:
    """The contract's inputs factory and float64 reference, loaded in the judge."""

    def __init__(self, contract: Contract, root: Path) -> None:
        self.contract = contract
        self.inputs = cmod.load_function(root, f"{contract.module}:{contract.inputs}", "inputs")
        self.reference = cmod.load_function(root, f"{contract.module}:{contract.reference}", "reference")
        self.device = cmod.resolve_device(contract)
        self.dtype = cmod.float_dtype(contract.dtype)

    def make(self, shape: dict[str, int], seed: int) -> list[Any]:
        return cmod.made_inputs(self.inputs, self.contract, self.device, shape, seed)
