"""The memory schema through jsonschema: violations name the field path; the shipped schema."""

from __future__ import annotations

import json

import pytest

from kernelpilot.workspace.schema import (
    SCHEMA_PATH,
    SchemaViolation,
    check_schema,
    memory_schema,
    validate,
    with_defaults,
)


def _good() -> dict:
    return {
        "schema_version": 1,
        "version": 2,
        "parent": 1,
        "created": "2026-11-22T17:00:00Z",
        "change": "tile 128x128",
        "correctness": {"passed": True, "max_rel_err": 2.5e-3},
        "performance": {"median": 812.5, "spread_pct": 0.8, "unit": "us", "vs_baseline": 1.4},
        "profile": {
            "verdict": "compute_bound",
            "confidence": 0.8,
            "evidence": [{"metric": "sm__x", "value": 91.0}],
        },
        "pitfalls_and_fixes": [{"pitfall": "bank conflicts", "fix": "pad smem row by 8"}],
        "masked": False,
        "commit": "0123abcd",
    }


def _path_of(record: dict) -> str:
    with pytest.raises(SchemaViolation) as info:
        validate(record, memory_schema())
    return info.value.path


def test_shipped_schema_is_in_package_and_valid():
    assert SCHEMA_PATH.name == "memory.schema.json" and SCHEMA_PATH.parent.name == "workspace"
    schema = memory_schema()
    check_schema(schema)
    for field in (
        "version",
        "parent",
        "plan",
        "change",
        "correctness",
        "performance",
        "profile",
        "pitfalls_and_fixes",
        "masked",
        "commit",
    ):
        assert field in schema["properties"], field


def test_good_record_validates():
    validate(_good(), memory_schema())


@pytest.mark.parametrize(
    ("mutate", "path", "reason"),
    [
        (
            lambda r: r["performance"].__setitem__("median", "fast"),
            "performance.median",
            "expected number or null",
        ),
        (
            lambda r: r["performance"].__setitem__("median", -3),
            "performance.median",
            "must be greater than 0",
        ),
        (lambda r: r["performance"].__setitem__("unit", "hours"), "performance.unit", "is not one of"),
        (lambda r: r["profile"].__setitem__("verdict", "slow"), "profile.verdict", "is not one of"),
        (lambda r: r["profile"].__setitem__("confidence", 1.5), "profile.confidence", "above the maximum 1"),
        (lambda r: r["correctness"].pop("passed"), "correctness.passed", "required field is missing"),
        (lambda r: r.__setitem__("speed", 3), "speed", "unknown field"),
        (lambda r: r["pitfalls_and_fixes"][0].pop("fix"), "pitfalls_and_fixes[0].fix", "required"),
        (
            lambda r: r["profile"]["evidence"][0].__setitem__("value", [1]),
            "profile.evidence[0].value",
            "number or string",
        ),
        (lambda r: r.__setitem__("version", True), "version", "expected integer, got boolean"),
        (lambda r: r.__setitem__("masked", 0), "masked", "expected boolean, got integer"),
        (lambda r: r.__setitem__("commit", "not-a-sha"), "commit", "does not match pattern"),
        (lambda r: r.__setitem__("change", ""), "change", "at least 1 characters"),
    ],
)
def test_violation_names_the_field_path(mutate, path, reason):
    rec = _good()
    mutate(rec)
    with pytest.raises(SchemaViolation) as info:
        validate(rec, memory_schema())
    assert info.value.path == path
    assert reason in info.value.reason


def test_check_schema_refuses_invalid_schemas():
    with pytest.raises(ValueError, match="should be non-empty"):
        check_schema({"type": "object", "properties": {"a": {"oneOf": []}}})
    with pytest.raises(ValueError, match="float"):
        check_schema({"type": "float"})


def test_with_defaults_fills_optional_fields():
    filled = with_defaults(_good(), memory_schema())
    assert filled["notes"] is None and filled["plan"] is None
    assert filled["performance"]["expected_speedup"] is None
    assert filled["profile"]["hotspots"] == [] and filled["profile"]["memory_level"] is None
    validate(filled, memory_schema())  # still valid


def test_schema_file_is_plain_json():
    data = json.loads(SCHEMA_PATH.read_text())
    assert data["additionalProperties"] is False


def test_create_json_exclusive_refuses_existing(tmp_path):
    from kernelpilot.foundation.atomic import create_json_exclusive

    target = tmp_path / "memory" / "v3.json"
    assert create_json_exclusive(target, {"a": 1}, mkdir=True) is True  # memory/ made when asked
    assert create_json_exclusive(target, {"a": 2}) is False
    assert json.loads(target.read_text()) == {"a": 1}
    assert sorted(p.name for p in target.parent.iterdir()) == ["v3.json"]  # no temp files left
