"""workload through the CLI and the MCP client: read, diff, report; the HTML page in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from tests.browser import screenshot

from kernelpilot.workload.core import diff_workload, read_workload
from kernelpilot.workload.models import WorkloadDiffRequest, WorkloadReadRequest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TRACE = FIXTURES / "workload/mi350x_flash_attn_kernel_trace.csv"


def test_cli_read_prints_table_and_writes_json_and_html(run_cli, tmp_path: Path):
    out, html = tmp_path / "r.json", tmp_path / "r.html"
    res = run_cli("workload", "read", str(TRACE), "--out", str(out), "--html", str(html))
    assert res.code == 0, res.err
    assert "flash_attn_func_kernel_0" in res.out and "839.8" in res.out and "opportunities" in res.out
    data = json.loads(out.read_text())
    assert data["kernels"][0]["launches_per_step"] == 9
    page = html.read_text()
    assert 'id="opportunities"' in page and "<svg" in page and "attn_fwd" in page


def test_cli_bad_trace_is_a_clean_error(run_cli, tmp_path: Path):
    bad = tmp_path / "x.json"
    bad.write_text('{"traceEvents": [')
    res = run_cli("workload", "read", str(bad))
    assert res.code != 0 and "truncated" in res.err and "Traceback" not in res.err


def test_diff_of_a_capture_with_itself_is_no_change_and_a_slower_kernel_is_found(tmp_path: Path):
    a = tmp_path / "a.json"
    read_workload(WorkloadReadRequest(path=str(TRACE), out=str(a)))
    same = diff_workload(WorkloadDiffRequest(a=str(a), b=str(a)))
    assert same.hot_changed == [] and same.verdict.startswith("no change")
    data = json.loads(a.read_text())
    data["kernels"][1]["us_per_step"] *= 1.10
    data["kernels"][1]["per_step_us"] = [v * 1.10 for v in data["kernels"][1]["per_step_us"]]
    b = tmp_path / "b.json"
    b.write_text(json.dumps(data))
    d = diff_workload(WorkloadDiffRequest(a=str(a), b=str(b)))
    row = next(r for r in d.rows if r.level == "kernel" and r.short_name.startswith("attn_fwd"))
    assert row.delta_pct == pytest.approx(10.0) and row.verdict == "unclear"  # one step: no interval
    assert d.hot_changed == [row.short_name]


def test_mcp_workload_read_and_report(tmp_path: Path):
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    out = tmp_path / "r.json"

    async def main() -> tuple[dict, dict, bool]:
        async with Client(build_server("workload")) as client:
            r = await client.call_tool("workload_read", {"path": str(TRACE), "out": str(out)})
            assert not r.is_error, r.content
            rep = await client.call_tool(
                "workload_report", {"path": str(out), "out": str(tmp_path / "r.html")}
            )
            bad = await client.call_tool("workload_read", {"path": str(tmp_path / "missing.csv")})
            return r.structured_content, rep.structured_content, bad.is_error

    res, rep, bad = anyio.run(main)
    assert res["kernels"][0]["name"] == "flash_attn_func_kernel_0" and res["format"] == "rocprof_trace"
    assert rep["sections"] == ["breakdown", "cumulative", "opportunities"] and rep["bytes"] > 1000
    assert bad


@pytest.mark.needs_tool("chromium")
def test_html_report_opens_in_headless_chromium_without_console_errors(tmp_path: Path):
    from kernelpilot.workload.core import report_workload
    from kernelpilot.workload.models import WorkloadReportRequest

    html = tmp_path / "workload.html"
    read_workload(WorkloadReadRequest(path=str(TRACE), html=str(html)))
    h100 = tmp_path / "h100_decode.html"  # a recorded H100 run: drill-down evidence and long next commands
    report_workload(
        WorkloadReportRequest(path=str(FIXTURES / "workload/h100_decode_run1.json"), out=str(h100))
    )
    for page in (html, h100):
        console, shot = screenshot(page, tmp_path, size="1400,2000")
        assert console == []
        assert shot.is_file() and shot.stat().st_size > 10_000
    assert "kernelpilot workspace init nvjet-sm90" in h100.read_text()
