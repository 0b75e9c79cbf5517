"""What `workload read` tells a newcomer (issue 42), on recorded H100 traces (tests/fixtures/workload):
what a trace read cannot do and the command that does it, why it counts the steps it counts, and an MCP
answer whose structured part keeps the ranked hot set (it kept 1 of 55 kernels while the text showed 20)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from kernelpilot.adapters.mcp_answer import ROW_STRING_CHARS
from kernelpilot.adapters.mcp_server import build_server
from kernelpilot.workload.core import TRACE_READ_LIMITS, read_workload
from kernelpilot.workload.models import WorkloadReadRequest

W = Path(__file__).resolve().parents[1] / "fixtures" / "workload"


def test_a_trace_read_says_it_drills_into_nothing_and_names_the_command_that_does() -> None:
    res = read_workload(WorkloadReadRequest(path=str(W / "h100_decode_trace.json")))
    assert res.drilled_share is None and all(k.drill is None and k.isa is None for k in res.kernels)
    assert TRACE_READ_LIMITS in res.notes
    text = res.render_text()
    assert "note: a trace read drills into no kernel" in text
    assert "next: `kernelpilot workload run STEP.py:make_step`" in text


def test_the_step_count_and_the_idle_mean_say_why() -> None:
    text = read_workload(WorkloadReadRequest(path=str(W / "h100_decode_trace.json"))).render_text()
    assert "step (3 steps, told apart by the trace's step ranges): kernels 371.3 µs" in text
    assert (
        "idle by cause (7350.8 µs/step, mean of 2 steps of 3: the last step has no gap to a next one)" in text
    )
    unmarked = read_workload(WorkloadReadRequest(path=str(W / "mi350x_flash_attn_kernel_trace.csv"), steps=2))
    assert "step (2 steps: no step ranges, the timeline split evenly)" in unmarked.render_text()


def _mcp_read(path: Path, tmp: Path) -> tuple[dict[str, Any], str]:
    async def main() -> Any:
        async with Client(build_server("workload")) as client:
            return await client.call_tool("workload_read", {"path": str(path)})

    import os

    os.environ["KERNELPILOT_MCP_RESULTS"] = str(tmp)
    try:
        res = anyio.run(main)
    finally:
        del os.environ["KERNELPILOT_MCP_RESULTS"]
    assert not res.is_error and res.structured_content is not None
    return res.structured_content, res.content[0].text


def test_the_mcp_answer_keeps_the_ranked_hot_set(tmp_path: Path) -> None:
    full = read_workload(WorkloadReadRequest(path=str(W / "h100_train_trace.json")))
    hot = [k.name for k in full.kernels if k.hot]
    assert len(full.kernels) > 50 and len(hot) >= 10
    data, text = _mcp_read(W / "h100_train_trace.json", tmp_path)
    names = [k["name"][:ROW_STRING_CHARS] for k in data["kernels"]]
    assert names == [n[:ROW_STRING_CHARS] for n in hot]  # the hot set in rank order
    assert f"kernels: first {len(hot)} of {len(full.kernels)}" in data["truncated"]
    assert any(t.startswith("kernels[].name: ") for t in data["truncated"])
    assert [k["us_per_step"] for k in data["kernels"]] == [k.us_per_step for k in full.kernels[: len(hot)]]
    assert len(data["opportunities"]) >= 3  # the decision rows stay too
    whole = json.loads(Path(data["full_result_path"]).read_text())
    assert len(whole["kernels"]) == len(full.kernels)  # every row reachable
    assert text.count("\n") > 20  # the text view still lists its 20 rows


def test_diff_shows_the_step_rows_its_verdict_is_about() -> None:
    """The verdict names the step (CUDA events, idle); those rows sat past row 40 of 66 (issue 42)."""
    from kernelpilot.workload.core import diff_workload
    from kernelpilot.workload.models import DIFF_ROWS, WorkloadDiffRequest

    res = diff_workload(
        WorkloadDiffRequest(a=str(W / "h100_train_run1.json"), b=str(W / "h100_train_run2.json"))
    )
    assert res.verdict.startswith("step (CUDA events) changed") and "step idle" in res.verdict
    step_rows = [r.short_name for r in res.rows if r.level == "step"]
    assert "step idle" in step_rows and "step (CUDA events, no tracer)" in step_rows
    assert [r.level for r in res.rows].index("step") >= DIFF_ROWS  # the model's order: kernels first
    lines = res.render_text().splitlines()
    table = lines[lines.index("") + 2 :]
    assert [ln.split()[0] for ln in table[: len(step_rows)]] == ["step"] * len(step_rows)
    assert all(name in "\n".join(table[: len(step_rows)]) for name in step_rows)
    assert len([ln for ln in table if not ln.startswith("...")]) == DIFF_ROWS
    assert table[-1] == f"... {len(res.rows) - DIFF_ROWS} more rows in the JSON"
