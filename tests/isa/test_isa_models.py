"""`kernels_from_values`, the quick constructor for reader output: the same models validation builds, and
validation itself wherever the quick path cannot be shown to agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from kernelpilot.isa import models
from kernelpilot.isa.cubin import cubin_rows, kernels_from_rows
from kernelpilot.isa.cubin_elf import CubinElf
from kernelpilot.isa.models import KernelResources, kernels_from_values

FX = Path(__file__).resolve().parent.parent / "fixtures" / "isa" / "nvidia"


def _validated(values: list[dict[str, Any]]) -> list[KernelResources]:
    return TypeAdapter(list[KernelResources]).validate_python(values)


@pytest.mark.parametrize("name", ["kernels.sm_75.cubin", "kernels.sm_90.cubin", "reqntid.sm_90.cubin"])
def test_quick_models_equal_validated_ones(name: str) -> None:
    path = FX / name
    arch, rows = cubin_rows(CubinElf(path.read_bytes(), name))
    quick = kernels_from_rows(rows, arch, name, with_id=True)
    assert quick
    values = [k.model_dump(include=k.model_fields_set) for k in quick]
    slow = _validated(values)
    for q, s in zip(quick, slow, strict=True):
        assert type(q) is KernelResources
        assert list(q.__dict__.items()) == list(s.__dict__.items())  # same values, same field order
        assert q.model_fields_set == s.model_fields_set
        assert q == s and repr(q) == repr(s)
        assert q.model_dump_json() == s.model_dump_json()
    again = kernels_from_rows(rows, arch, name, with_id=True)
    q = quick[0]
    q.registers = 251  # instances are independent and still assignable
    assert q.registers == 251 and again[0].registers != 251
    assert q.model_fields_set is not again[0].model_fields_set


def test_missing_field_without_shareable_default_falls_back_to_validation() -> None:
    base = {"name": "k", "demangled": "k", "vendor": "nvidia", "arch": "sm_90", "entry": "e"}
    # constant_banks has a mutable default (a dict per instance): the quick path must not share one
    assert models._builder(frozenset(base)) is None
    got = kernels_from_values([dict(base), dict(base)])
    assert got[0].constant_banks == {} and got[0].constant_banks is not got[1].constant_banks


def test_disagreeing_quick_path_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    base = {"name": "k", "demangled": "k", "vendor": "nvidia", "arch": "sm_90", "entry": "e"}
    values: list[dict[str, Any]] = [dict(base, constant_banks={})]
    keys = frozenset(values[0])
    build = models._builder(keys)
    assert build is not None

    def wrong(vals: list[dict[str, Any]]) -> list[KernelResources]:
        out = build(vals)
        out[0].__dict__["registers"] = 99  # what another pydantic's internals might do differently
        return out

    monkeypatch.setattr(models, "_builder", lambda k: wrong)
    got = kernels_from_values(values)
    assert got[0].registers is None  # validated, not the quick path
