"""Reading a sweep: the TOML spec, the JSONL shape ledger, and what each variant needs from a shape.

Everything is checked before a single cell runs, so a bad line or a missing field is a typed error
naming the line and the variant, never a crash on a worker. The sweep id is a hash of the spec and
of the factory files it names, so an edited kernel is a new sweep while an unchanged one resumes.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import re
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.foundation.models import compact_json
from kernelpilot.foundation.text import plain_error
from kernelpilot.sweep.errors import LedgerError, SweepSpecError, UnknownVariantError
from kernelpilot.sweep.models import LEDGER_META, Shape, SweepSpec, VariantSpec


@dataclass
class LoadedSweep:
    spec: SweepSpec
    path: Path
    root: Path
    shapes: list[Shape]
    sweep_id: str


def _validation_text(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "spec"
        parts.append(f"{loc}: {plain_error(err)}")
    return "; ".join(parts)


def read_spec(path: Path) -> SweepSpec:
    try:  # the guarded reader: file kind and size, depth, 64-bit integers, finite floats only
        data = readers.read_toml(path, "sweep spec")
    except KernelpilotError as exc:
        raise SweepSpecError(exc.message, exc.hint or "fix the TOML syntax") from exc
    try:
        spec = SweepSpec.model_validate(data)
    except ValidationError as exc:
        raise SweepSpecError(f"sweep spec {path}: {_validation_text(exc)}", "fix the named key") from exc
    if spec.baseline not in spec.variants:
        raise UnknownVariantError(
            f"sweep spec {path}: baseline {spec.baseline!r} is not a variant "
            f"(variants: {', '.join(spec.variants)})",
            "name one of the [variants.<name>] tables as baseline",
        )
    units = {n: (v.metric_unit if v.command is not None else "us") for n, v in spec.variants.items()}
    if len(set(units.values())) > 1:
        raise SweepSpecError(
            f"sweep spec {path}: variants measure in different units ({units}); speed-ups need one unit",
            'make every command print its metric in microseconds (metric_unit = "us") like the factories',
        )
    return spec


def _shape_key(obj: dict[str, Any]) -> str:
    return hashlib.sha256(compact_json(obj).encode()).hexdigest()[:12]


def read_ledger(path: Path) -> list[Shape]:
    """Every shape of a JSONL ledger; a bad line is a `LedgerError` naming the file and line."""
    shapes: list[Shape] = []
    seen: dict[str, int] = {}
    try:
        text = readers.read_text(path, "shape ledger")
    except KernelpilotError as exc:
        raise LedgerError(exc.message, "give `ledger` relative to the spec file") from exc
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{path.name}:{lineno}"
        try:
            obj = readers.loads_json(raw, path.name, line=lineno)
        except readers.ReaderError as exc:
            raise LedgerError(
                exc.message,
                "write one JSON object per line, e.g. "
                '{"model": "llama3-8b", "stage": "prefill", "dtype": "bf16", "m": 4096}',
            ) from exc
        if not isinstance(obj, dict):
            raise LedgerError(f"{where} is a JSON {type(obj).__name__}, not an object", "one object per line")
        for key in ("model", "stage", "dtype"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise LedgerError(f"{where} lacks {key!r} (a non-empty string)", f"add {key!r} to the line")
        weight = obj.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, int | float) or not math.isfinite(weight):
            raise LedgerError(f"{where}: weight {weight!r} is not a number", "give a positive number")
        if weight <= 0:
            raise LedgerError(f"{where}: weight {weight!r} must be > 0", "drop the line or weigh it > 0")
        fields = {k: v for k, v in obj.items() if k not in LEDGER_META}
        if not fields:
            raise LedgerError(f"{where} has no shape fields", 'add the dimensions, e.g. "m": 4096')
        key = _shape_key(obj)
        if key in seen:
            raise LedgerError(
                f"{where} repeats line {seen[key]} of the ledger", "list each shape once (use weight)"
            )
        seen[key] = lineno
        shapes.append(
            Shape(
                line=lineno,
                model=obj["model"],
                stage=obj["stage"],
                dtype=obj["dtype"],
                weight=float(weight),
                fields=fields,
                key=key,
            )
        )
    if not shapes:
        raise LedgerError(f"shape ledger {path} holds no shapes", "add one JSON object per line")
    return shapes


def factory_path(spec: str, root: Path) -> Path | None:
    """The .py file of a 'file.py:function' spec (None for 'module:function')."""
    module_part = spec.rpartition(":")[0]
    if module_part.endswith(".py") or "/" in module_part:
        p = Path(module_part)
        return p if p.is_absolute() else root / p
    return None


def required_params(fn: Any) -> tuple[set[str], set[str], bool]:
    """(required keyword names, all accepted names, takes **kwargs) of a factory."""
    sig = inspect.signature(fn)
    required, accepted, var_kw = set(), set(), False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            accepted.add(p.name)
            if p.default is p.empty:
                required.add(p.name)
    return required, accepted, var_kw


def template_fields(argv: list[str]) -> set[str]:
    names: set[str] = set()
    for arg in argv:
        for _lit, name, _fmt, _conv in string.Formatter().parse(arg):
            if name:
                names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def check_needs(loaded: LoadedSweep) -> None:
    """Every variant finds the fields it needs in every shape (LedgerError naming line and variant)."""
    from kernelpilot.timing.callables import load_factory

    for name, v in loaded.spec.variants.items():
        needs: set[str] = set()
        if v.command is not None:
            try:
                needs = template_fields(v.command)
            except ValueError as exc:
                raise SweepSpecError(
                    f"variant {name!r}: command template {v.command!r} is malformed: {exc}",
                    "use {field} placeholders; write {{ and }} for literal braces",
                ) from exc
        else:
            for target in (v.factory, v.reference):
                if target is None:
                    continue
                try:
                    fn = load_factory(target, loaded.root)
                except KernelpilotError as exc:
                    raise type(exc)(f"variant {name!r}: {exc.message}", exc.hint) from exc
                required, _acc, _var = required_params(fn)
                needs |= required - {"seed"}
        for shape in loaded.shapes:
            missing = sorted(needs - set(shape.kwargs()))
            if missing:
                raise LedgerError(
                    f"ledger line {shape.line} ({shape.label()}) lacks field(s) {', '.join(missing)} that "
                    f"variant {name!r} needs",
                    "add the field to that ledger line, or give the factory argument a default",
                )


def sweep_id(spec: SweepSpec, root: Path, label: str) -> str:
    """`sweep-<name slug>-<12 hex>`: the hash covers the spec (not the ledger path) and factory files."""
    h = hashlib.sha256()
    doc = spec.model_dump(mode="json")
    doc.pop("ledger", None)
    doc["label"] = label
    h.update(compact_json(doc).encode())
    for vname in sorted(spec.variants):
        v: VariantSpec = spec.variants[vname]
        for target in (v.factory, v.reference):
            if target is None:
                continue
            p = factory_path(target, root)
            if p is not None and p.is_file():
                h.update(b"\0" + target.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    slug = re.sub(r"[^A-Za-z0-9]+", "-", spec.name).strip("-")[:40] or "sweep"
    return f"sweep-{slug}-{h.hexdigest()[:12]}"


def load(spec_path: str, label: str = "", check: bool = True) -> LoadedSweep:
    path = Path(spec_path).expanduser()
    spec = read_spec(path)
    root = path.resolve().parent
    shapes = read_ledger(root / spec.ledger)
    loaded = LoadedSweep(spec, path, root, shapes, sweep_id(spec, root, label))
    if check:
        check_needs(loaded)
    return loaded
