"""The workspace's JSON Schema (`memory.schema.json`), checked by `jsonschema` (Draft 2020-12).

This module only turns the validator's first error into a `SchemaViolation` that names the field by path
(`performance.median`, `pitfalls_and_fixes[0].fix`) with a short reason, and fills absent optional fields
for the report templates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

SCHEMA_PATH = Path(__file__).resolve().parent / "memory.schema.json"


class SchemaViolation(Exception):
    """One violation: `path` (dotted, with `[i]` for array items) and a readable `reason`."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path or '<root>'}: {reason}")
        self.path = path
        self.reason = reason


def check_schema(schema: Any) -> None:
    """Refuse a schema that is not valid Draft 2020-12 (`ValueError` naming the problem)."""
    try:
        Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise ValueError(f"invalid JSON Schema: {exc.message}") from exc


def _path(parts: Iterable[Any]) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if Draft202012Validator.TYPE_CHECKER.is_type(value, name):
            return name
    return type(value).__name__


def _violation(err: ValidationError) -> SchemaViolation:
    """The error as (field path, reason) in the words the memory tools print."""
    path = _path(err.absolute_path)
    # the error's fields, as plain values (the stubs type them "possibly unset"; iter_errors sets them all)
    kw: str = str(err.validator)
    want: Any = err.validator_value
    value: Any = err.instance
    sub: Any = err.schema
    if kw == "required":
        missing = next((k for k in want if k not in value), "?")
        return SchemaViolation(_path([*err.absolute_path, missing]), "required field is missing")
    if kw == "additionalProperties":
        props = sub.get("properties", {}) if isinstance(sub, dict) else {}
        extra = next((k for k in value if k not in props), "?")
        allowed = ", ".join(sorted(props))
        return SchemaViolation(_path([*err.absolute_path, extra]), f"unknown field (allowed: {allowed})")
    reasons = {
        "type": lambda: (
            f"expected {' or '.join([want] if isinstance(want, str) else want)}, got {_type_name(value)}"
        ),
        "enum": lambda: f"{json.dumps(value)} is not one of {', '.join(json.dumps(e) for e in want)}",
        "minimum": lambda: f"{value} is below the minimum {want}",
        "exclusiveMinimum": lambda: f"{value} must be greater than {want}",
        "maximum": lambda: f"{value} is above the maximum {want}",
        "minLength": lambda: f"must have at least {want} characters",
        "pattern": lambda: f"{value!r} does not match pattern {want!r}",
        "minItems": lambda: f"must have at least {want} items",
    }
    make = reasons.get(kw)
    return SchemaViolation(path, make() if make else err.message)


def _order(err: ValidationError) -> tuple[Any, ...]:
    """Outermost field first, then document order of the path: the first violation a reader meets."""
    return (len(err.absolute_path), tuple(str(p) for p in err.absolute_path))


def validate(value: Any, schema: dict[str, Any]) -> None:
    """Raise `SchemaViolation` for the first violation (outermost field first)."""
    errors = sorted(_validator(json.dumps(schema, sort_keys=True)).iter_errors(value), key=_order)
    if errors:
        raise _violation(errors[0])


@cache
def _validator(schema_json: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads(schema_json))


@cache
def memory_schema() -> dict[str, Any]:
    """The shipped `memory.schema.json`, checked once against the Draft 2020-12 meta-schema."""
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    check_schema(schema)
    return schema


def with_defaults(value: Any, schema: dict[str, Any]) -> Any:
    """Copy of `value` with every absent optional object property filled: `[]` for arrays, else None.

    Templates then see every field the schema names (and print TBD/'-' for the missing ones).
    """
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties", {})
        out = {k: (with_defaults(v, props[k]) if k in props else v) for k, v in value.items()}
        for key, sub in props.items():
            if key not in out:
                types = sub.get("type")
                names = [types] if isinstance(types, str) else list(types or [])
                if names == ["array"]:
                    out[key] = []
                elif names == ["object"]:
                    out[key] = with_defaults({}, sub)
                else:
                    out[key] = None
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [with_defaults(v, schema["items"]) for v in value]
    return value
