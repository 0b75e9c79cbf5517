"""Validation errors reach users in plain words (issue 42): never pydantic's "Field required" / "Input should
be", never the input's Python repr (`input_value={'kernels': [{}]}`), on the CLI and over MCP."""

from __future__ import annotations

import anyio
import pytest
from mcp import Client
from pydantic import BaseModel, ValidationError

from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.foundation.text import plain_errors

PYDANTIC_WORDS = ("Field required", "Input should be", "input_value", "pydantic.dev", "{'")


class _Peak(BaseModel):
    metric: str
    value: float
    tags: dict[str, str] = {}


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        ({"value": 1.0}, "metric: is missing"),
        ({"metric": 3, "value": 1.0}, "metric: must be a string, got a number"),
        ({"metric": "m", "value": "fast"}, "value: must be a number, got a string"),
        ({"metric": "m", "value": 1.0, "tags": [1]}, "tags: must be a JSON object, got a list"),
    ],
)
def test_each_problem_in_plain_words(doc: dict[str, object], want: str) -> None:
    with pytest.raises(ValidationError) as info:
        _Peak.model_validate(doc)
    text = plain_errors(info.value.errors())
    assert text == want and not any(w in text for w in PYDANTIC_WORDS)


def test_many_problems_are_counted_not_dumped() -> None:
    with pytest.raises(ValidationError) as info:
        _Peak.model_validate({"metric": 1, "value": "x", "tags": 2})
    assert plain_errors(info.value.errors(), limit=2).endswith("(and 1 more)")


def test_the_cli_names_the_argument_in_plain_words(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("bottleneck", "--profile-json", '{"kernels": [{}]}')
    assert r.code == 2 and "profile_json is not a profile result: profiler: is missing" in r.err
    assert "kernels[0].kernel: is missing" in r.err and not any(w in r.err for w in PYDANTIC_WORDS)
    r = run_cli("memory", "update", "--workspace", "x", "--version", "0", "--patch", "[1]")
    assert r.code == 2 and "--patch: must be a JSON object, got a list" in r.err
    assert not any(w in r.err for w in PYDANTIC_WORDS)


def test_an_mcp_client_gets_the_same_plain_words() -> None:
    async def main() -> str:
        async with Client(build_server("all")) as client:
            res = await client.call_tool("classify_bottleneck", {"profile_json": '{"kernels": [{}]}'})
            assert res.is_error
            text = res.content[0].text
            bad = await client.call_tool("memory_update", {"workspace": "x", "version": 0, "patch": [1]})
            assert bad.is_error
            return text + "\n" + bad.content[0].text

    text = anyio.run(main)
    assert "profiler: is missing" in text and "patch: must be a JSON object, got a list" in text
    assert not any(w in text for w in PYDANTIC_WORDS)
