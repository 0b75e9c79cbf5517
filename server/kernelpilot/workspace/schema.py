"""A small validator for the subset of JSON Schema the workspace ships (no `jsonschema` dependency).

Supported keywords: `type` (a name or a list of names: object, array, string, number, integer,
boolean, null), `required`, `properties`, `additionalProperties` (bool or schema), `enum`,
`minimum`, `maximum`, `exclusiveMinimum`, `minLength`, `pattern`, `items`, `minItems`.
Any other keyword in a schema is a programming error and raises `ValueError` at load time, so the
shipped schema can never silently use something this validator ignores.
Errors name the field by path, e.g. `performance.median` or `pitfalls_and_fixes[0].fix`.
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

SUPPORTED_KEYWORDS = frozenset(
    {
        "$schema",
        "$id",
        "title",
        "description",
        "type",
        "required",
        "properties",
        "additionalProperties",
        "enum",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "minLength",
        "pattern",
        "items",
        "minItems",
    }
)

_TYPE_CHECKS: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}

SCHEMA_PATH = Path(__file__).resolve().parent / "memory.schema.json"


class SchemaViolation(Exception):
    """One violation: `path` (dotted, with `[i]` for array items) and a readable `reason`."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path or '<root>'}: {reason}")
        self.path = path
        self.reason = reason


def check_schema(schema: Any, where: str = "<root>") -> None:
    """Refuse schemas that use keywords this validator does not implement."""
    if not isinstance(schema, dict):
        if isinstance(schema, bool):
            return
        raise ValueError(f"schema at {where} must be an object")
    unknown = set(schema) - SUPPORTED_KEYWORDS
    if unknown:
        raise ValueError(f"schema at {where} uses unsupported keywords {sorted(unknown)}")
    types = schema.get("type")
    for t in [types] if isinstance(types, str) else (types or []):
        if t not in _TYPE_CHECKS:
            raise ValueError(f"schema at {where} has unknown type {t!r}")
    for name, sub in schema.get("properties", {}).items():
        check_schema(sub, f"{where}.{name}")
    if isinstance(schema.get("additionalProperties"), dict):
        check_schema(schema["additionalProperties"], f"{where}.*")
    if "items" in schema:
        check_schema(schema["items"], f"{where}[]")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPE_CHECKS[name](value) and not (name == "integer" and isinstance(value, float)):
            return name
    return type(value).__name__


def validate(value: Any, schema: dict[str, Any], path: str = "") -> None:
    """Raise `SchemaViolation` at the first field (depth-first, in schema order) that breaks `schema`."""
    types = schema.get("type")
    if types is not None:
        names = [types] if isinstance(types, str) else list(types)
        if not any(_TYPE_CHECKS[t](value) for t in names):
            raise SchemaViolation(path, f"expected {' or '.join(names)}, got {_type_name(value)}")
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(e) for e in schema["enum"])
        raise SchemaViolation(path, f"{json.dumps(value)} is not one of {allowed}")
    if _TYPE_CHECKS["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaViolation(path, f"{value} is below the minimum {schema['minimum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            raise SchemaViolation(path, f"{value} must be greater than {schema['exclusiveMinimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaViolation(path, f"{value} is above the maximum {schema['maximum']}")
    if isinstance(value, str):
        if "minLength" in schema and len(value) < schema["minLength"]:
            raise SchemaViolation(path, f"must have at least {schema['minLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            raise SchemaViolation(path, f"{value!r} does not match pattern {schema['pattern']!r}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise SchemaViolation(_join(path, key), "required field is missing")
        props: dict[str, Any] = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, sub_value in value.items():
            if key in props:
                validate(sub_value, props[key], _join(path, key))
            elif extra is False:
                allowed = ", ".join(sorted(props))
                raise SchemaViolation(_join(path, key), f"unknown field (allowed: {allowed})")
            elif isinstance(extra, dict):
                validate(sub_value, extra, _join(path, key))
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise SchemaViolation(path, f"must have at least {schema['minItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")


@cache
def memory_schema() -> dict[str, Any]:
    """The shipped `memory.schema.json`, checked once for unsupported keywords."""
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
