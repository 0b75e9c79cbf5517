"""Every MCP answer fits an agent's context (issue 35): through the official client, on recorded fixtures (the
H100 training and decode traces, a recorded paired compare with its samples, libcublasLt's resources, a full
ncu CSV with every raw metric), text plus structured content stay within 32,000 characters (8,000 tokens at
~4 characters a token), the text is the CLI's view (never the JSON again), and every row a digest cut is
still in the full result the answer names. The calls are in `tests/foundation/mcp_answers.py`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from tests.foundation.mcp_answers import (
    BUDGET_CHARS,
    CALLS,
    NOT_CALLED,
    Call,
    answer_size,
    answering_with,
    dotted,
)

from kernelpilot.adapters.mcp_answer import ANSWER_CHARS
from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.capabilities import by_tool


def _call(call: Call, args: dict[str, Any]) -> Any:
    async def main() -> Any:
        async with Client(build_server("all")) as client:
            return await client.call_tool(call.tool, args)

    with answering_with(call):
        return anyio.run(main)


def _trimmed_of(got: Any, whole: Any) -> bool:
    """`got` is `whole` with lists and mappings cut to their first items and long strings cut where the
    answer says so ("... [cut: N more characters]"); every number, flag and uncut string equal."""
    if isinstance(got, dict) and isinstance(whole, dict):
        return list(got) == list(whole)[: len(got)] and all(_trimmed_of(got[k], whole[k]) for k in got)
    if isinstance(got, list) and isinstance(whole, list):
        return len(got) <= len(whole) and all(_trimmed_of(g, w) for g, w in zip(got, whole, strict=False))
    if isinstance(got, str) and isinstance(whole, str) and "... [cut: " in got and got != whole:
        return whole.startswith(got.split("... [cut: ")[0])
    return bool(got == whole)


def _rows_reachable(structured: dict[str, Any]) -> int:
    """Each cut list named in `truncated` has all its rows in the full result, the answer's rows first."""
    full = json.loads(Path(structured["full_result_path"]).read_text(encoding="utf-8"))
    checked = 0
    for note in structured["truncated"]:
        m = re.fullmatch(r"([\w.]+): first (\d+) of (\d+)", note)
        if not m:  # nested lists ("kernels[].raw_metrics ... in 3 lists") and the text-only note
            continue
        path, kept, total = m.group(1), int(m.group(2)), int(m.group(3))
        got, whole = dotted(structured, path), dotted(full, path)
        assert len(got) == kept and len(whole) == total, note
        if isinstance(whole, list):
            # rows a result keeps (`answer_keep`) may have their own lists and long strings cut
            assert _trimmed_of(got, whole[:kept]), (
                f"{note}: the answer's rows are not the full result's first rows"
            )
        else:
            assert {k: whole[k] for k in got} == got, note
        checked += 1
    return checked


def test_every_tool_has_a_call_or_a_reason() -> None:
    async def main() -> set[str]:
        async with Client(build_server("all")) as client:
            return {t.name for t in (await client.list_tools()).tools}

    listed = anyio.run(main)
    called = {c.tool for c in CALLS}
    assert listed - called - set(NOT_CALLED) == set(), "add a Call to tests/foundation/mcp_answers.py"
    assert not set(NOT_CALLED) & called and set(NOT_CALLED) <= listed
    assert BUDGET_CHARS == ANSWER_CHARS


# a call that needs an external program carries the needs_tool mark (tests/conftest.py): skipped with the
# tool's name locally, a failure in CI
@pytest.mark.parametrize(
    "call",
    [
        pytest.param(c, id=c.id, marks=[pytest.mark.needs_tool(c.needs_tool)] if c.needs_tool else [])
        for c in CALLS
    ],
)
def test_answer_fits_the_budget_and_every_row_is_reachable(call: Call, tmp_path: Path) -> None:
    res = _call(call, call.args(tmp_path))
    assert not res.is_error, res.content
    text, structured = answer_size(res)
    assert text + structured <= BUDGET_CHARS, (call.id, text, structured)
    data = res.structured_content
    assert data is not None
    body = res.content[0].text
    assert not body.lstrip().startswith("{"), "the text content is the CLI's view, not the JSON again"
    cap = by_tool(call.tool)
    if data.get("full_result_path"):
        assert data["truncated"] and data["full_result_path"] in body
        full = Path(data["full_result_path"]).read_text(encoding="utf-8")
        if cap is not None:
            cap.result.model_validate_json(full)  # the file is the whole result model
        if call.recorded is not None:
            assert json.loads(full) == call.recorded().model_dump(mode="json")
        _rows_reachable(data)
    if call.rows and call.recorded is not None:
        whole = call.recorded().model_dump(mode="json")
        source = (
            json.loads(Path(data["full_result_path"]).read_text()) if data.get("full_result_path") else data
        )
        assert len(dotted(source, call.rows)) == len(dotted(whole, call.rows))


@pytest.mark.parametrize(
    "label",
    ["workload_read[h100-train]", "profile_parse[ncu-full-raw]", "isa_resources[recorded-libcublasLt]"],
)
def test_the_long_results_are_cut_and_say_so(label: str, tmp_path: Path) -> None:
    """The acceptance cases that were 60,000-2,400,000 tokens: cut, named, and whole on disk."""
    call = next(c for c in CALLS if c.id == label)
    res = _call(call, call.args(tmp_path))
    data = res.structured_content
    assert data is not None and data["full_result_path"] and data["truncated"]
    full = json.loads(Path(data["full_result_path"]).read_text(encoding="utf-8"))
    assert len(json.dumps(full, separators=(",", ":"))) > 3 * BUDGET_CHARS
    assert _rows_reachable(data) >= 1 or "raw_metrics" in " ".join(data["truncated"])
    assert len(dotted(full, call.rows)) >= len(dotted(data, call.rows)) >= 1


def test_errors_name_the_tool_arguments_not_the_cli_options() -> None:
    """A core error says `--batch` / `give --m` (the CLI's words); over MCP it names the arguments."""

    async def main() -> tuple[str, str]:
        async with Client(build_server()) as client:
            bmm = await client.call_tool(
                "roofline", {"gpu": "h100-sxm5", "op": "bmm", "m": 64, "n": 64, "k": 64}
            )
            gemm = await client.call_tool("roofline", {"gpu": "h100-sxm5", "op": "gemm", "m": 64, "n": 64})
            assert bmm.is_error and gemm.is_error
            return bmm.content[0].text, gemm.content[0].text

    bmm, gemm = anyio.run(main)
    assert "`batch`" in bmm and "--batch" not in bmm, bmm
    assert "`k`" in gemm and "--k" not in gemm, gemm
