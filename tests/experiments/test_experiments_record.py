"""Record validation: bad records are refused with the field named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from pydantic import ValidationError

from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.store import record_error

GOOD: dict[str, Any] = {"operator": "gemm", "summary": "tile 128 - 1.4x", "status": "success", "score": 1.4}


def bad(**changes: Any) -> str:
    data = {**GOOD, **changes}
    with pytest.raises(ValidationError) as info:
        ExperimentRecord.model_validate(data)
    return record_error(info.value, "test").message


def test_good_record_defaults() -> None:
    r = ExperimentRecord.model_validate(GOOD)
    assert r.id.startswith("exp-") and len(r.id) == 20
    assert r.created.tzinfo is UTC and r.what() == "tile 128"
    assert r.record_version == 2 and r.tags == [] and r.profiling.verdicts == []


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"summary": "x - " + "y" * 77}, "summary", "81 characters"),
        ({"summary": "no separator here"}, "summary", "' - '"),
        ({"summary": "two - \nlines"}, "summary", "one line"),
        ({"score": 0}, "score", "> 0"),
        ({"score": float("nan")}, "score", "finite"),
        ({"score": "fast"}, "score", "number"),
        ({"status": "great"}, "status", "success"),
        ({"operator": ""}, "operator", "at least 1"),
        ({"bogus": 1}, "bogus", "not a known field"),
        ({"id": "a b"}, "id", "letters, digits"),
        ({"id": "'; DROP TABLE records; --"}, "id", "letters, digits"),
        ({"parent_id": "../x"}, "parent_id", "letters, digits"),
        ({"created": "2026-11-01T10:00:00"}, "created", "timezone"),
        ({"dtype": "bf\x0016"}, "dtype", "NUL"),
        ({"description": {"why": "a\x00b"}}, "description.why", "NUL"),
        ({"environment": {"libraries": {"torch": "\ud800"}}}, "environment.libraries.torch", "surrogate"),
        ({"raw_result": {"t": float("inf")}}, "raw_result", "infinity"),
        ({"raw_result": {"t": ["ok", "\x00"]}}, "raw_result", "NUL"),
        ({"tags": ["a", "a"]}, "tags", "repeat"),
        ({"tags": [""]}, "tags", "1-64"),
        ({"shapes": {"M": "big"}}, "shapes.M", "integer"),
        ({"profiling": {"verdicts": [{"kernel": "k", "verdict": "slow", "confidence": 0.5}]}},
         "profiling.verdicts.0.verdict", "compute_bound"),
        ({"profiling": {"verdicts": [{"kernel": "k", "verdict": "unknown", "confidence": 1.5}]}},
         "profiling.verdicts.0.confidence", "less than or equal to 1"),
        ({"links": {"ledger": 5}}, "links.ledger", "string"),
    ],
)  # fmt: skip
def test_invalid_field_named(changes: dict[str, Any], field: str, words: str) -> None:
    msg = bad(**changes)
    assert f"{field}: " in msg and words in msg, msg


def test_cross_field_rules() -> None:
    assert "error_message: required when is_buggy" in bad(is_buggy=True)
    assert "parent_id: a record cannot be its own parent" in bad(id="a1", parent_id="a1")


def test_time_normalised_to_utc() -> None:
    t = datetime(2026, 11, 1, 12, 0, 0, 5, tzinfo=timezone(timedelta(hours=2)))
    r = ExperimentRecord.model_validate({**GOOD, "created": t})
    assert r.created == t and r.created.tzinfo is UTC and r.created.hour == 10
    assert r.model_dump(mode="json")["created"] == "2026-11-01T10:00:00.000005Z"
