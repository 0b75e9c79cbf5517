"""The sweep report from the database: text, the HTML dashboard (in headless Chromium), MCP with progress."""

from __future__ import annotations

import html
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path

import anyio
import pytest
from tests.browser import screenshot

from kernelpilot.sweep.models import SweepReportRequest, SweepRunRequest
from kernelpilot.sweep.report import sweep_report
from kernelpilot.sweep.run import run_sweep

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, Path]:
    """One recorded CPU sweep (2 variants x 12 shapes), shared by the report tests: (db, sweep id, dir)."""
    import shutil

    d = tmp_path_factory.mktemp("sweep")
    src = Path(__file__).resolve().parent.parent / "fixtures" / "sweep"
    for f in ("kernels.py", "shapes.jsonl", "sweep.toml"):
        shutil.copy(src / f, d / f)
    db = str(d / "exp.db")
    res = run_sweep(SweepRunRequest(spec=str(d / "sweep.toml"), db=db, device="cpu", workers=2))
    return db, res.summary.sweep_id, d


def test_report_reads_back_what_run_returned(recorded):
    db, sid, d = recorded
    again = run_sweep(SweepRunRequest(spec=str(d / "sweep.toml"), db=db, device="cpu", workers=2))
    rep = sweep_report(SweepReportRequest(id=sid, db=db))
    assert rep.summary == again.summary
    text = rep.render_text()
    assert f"sweep {sid} (rowsum-cpu): 2 variants x 12 shapes, 24 cells recorded" in text
    assert text.count("\n  L") == 12
    einsum = next(s for s in rep.summary.summaries if s.variant == "einsum")
    assert f"einsum: weighted geomean {einsum.geomean:.3f}x" in text


def test_dashboard_has_every_cell_worst_shapes_first(recorded, tmp_path: Path):
    db, sid, _d = recorded
    out = tmp_path / "dash.html"
    rep = sweep_report(SweepReportRequest(id=sid, db=db, html=True, out=str(out)))
    assert rep.html == str(out)
    page = out.read_text()
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org/2000/svg", "")
    assert page.count('class="chart heatmap"') == 1 and page.count('class="chart speedup"') == 1
    # 24 heat-map cells: 12 baseline + 12 candidate tiles
    heat = page.split('class="chart heatmap"')[1].split("</svg>")[0]
    assert heat.count('stroke="#ccc"') == 24
    # the per-shape table lists shapes worst first (lowest candidate speed-up first)
    cells = rep.summary.cells
    worst_line = min((c for c in cells if c.speedup is not None), key=lambda c: c.speedup).line
    table = html.unescape(page.split("<h2>Per shape</h2>")[1])
    first_row = re.search(r"<td>L(\d+)</td>", table)
    assert first_row and int(first_row.group(1)) == worst_line
    assert "No roofline %: no gpu in the spec" in html.unescape(page)
    # every inline chart is well-formed SVG (a browser would otherwise drop or garble it)
    svgs = re.findall(r"<svg .*?</svg>", page, flags=re.S)
    assert len(svgs) == 2
    for svg in svgs:
        root = ET.fromstring(svg)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.needs_tool("chromium")
def test_dashboard_opens_in_headless_chromium_without_console_errors(recorded, tmp_path: Path):
    db, sid, _d = recorded
    out = tmp_path / "dash.html"
    sweep_report(SweepReportRequest(id=sid, db=db, out=str(out)))
    console, shot = screenshot(out, tmp_path, size="1400,2000")
    assert console == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and struct.unpack(">II", data[16:24])[0] == 1400
    assert len(data) > 20_000  # a rendered page, not a blank one


def test_sweep_run_over_mcp_streams_progress_per_cell(sweep_dir: Path, tmp_path: Path):
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    async def main() -> dict:
        async with Client(build_server("sweep")) as client:
            res = await client.call_tool(
                "sweep_run",
                {
                    "spec": str(sweep_dir / "sweep.toml"),
                    "db": str(tmp_path / "e.db"),
                    "device": "cpu",
                    "workers": 2,
                },
                progress_callback=on_progress,
            )
            assert not res.is_error, res.content
            bad = await client.call_tool(
                "sweep_report", {"id": "sweep-nope-000000000000", "db": str(tmp_path / "e.db")}
            )
            assert bad.is_error and "no sweep 'sweep-nope-000000000000'" in bad.content[0].text
            return res.structured_content

    out = anyio.run(main)
    assert out["new_cells"] == 24 and len(out["summary"]["cells"]) == 24
    assert [p for p, _t in seen] == list(range(25)) and all(t == 24 for _p, t in seen)


def test_cli_draws_a_progress_bar_and_prints_the_table(sweep_dir: Path, tmp_path: Path, monkeypatch, run_cli):
    monkeypatch.setenv("KERNELPILOT_PROGRESS", "1")
    r = run_cli(
        "sweep",
        "run",
        str(sweep_dir / "sweep.toml"),
        "--device",
        "cpu",
        "--workers",
        "2",
        "--db",
        str(tmp_path / "e.db"),
        "--html",
        str(tmp_path / "d.html"),
    )
    assert r.code == 0, r.err
    assert "[##############################] 24/24" in r.err
    assert r.out.startswith("ran 24 new cell(s), skipped 0 already recorded, on local Dask cluster, 2 CPU")
    assert (tmp_path / "d.html").is_file() and f"dashboard: {tmp_path / 'd.html'}" in r.out


def test_report_names_and_skips_invalid_stored_cells(recorded, tmp_path: Path):
    """Issue 41: one cell record edited by hand (no longer a record) and one that lost a sweep field are
    named with their ids; the report of the other 22 cells still comes back."""
    import json
    import shutil
    import sqlite3

    db, sid, _d = recorded
    copy = tmp_path / "exp.db"
    shutil.copy(db, copy)
    conn = sqlite3.connect(copy)
    ids = [r[0] for r in conn.execute("SELECT id FROM records WHERE parent_id = ? ORDER BY id", (sid,))]
    broken, stripped = ids[0], ids[1]
    doc = json.loads(conn.execute("SELECT doc FROM records WHERE id = ?", (broken,)).fetchone()[0])
    doc["status"] = "exploded"
    conn.execute("UPDATE records SET doc = ? WHERE id = ?", (json.dumps(doc), broken))
    doc = json.loads(conn.execute("SELECT doc FROM records WHERE id = ?", (stripped,)).fetchone()[0])
    del doc["raw_result"]["variant"]
    conn.execute("UPDATE records SET doc = ? WHERE id = ?", (json.dumps(doc), stripped))
    conn.commit()
    conn.close()
    rep = sweep_report(SweepReportRequest(id=sid, db=str(copy)))
    assert len(rep.summary.cells) == 22 and not rep.summary.complete
    assert [u.split(":")[0] for u in rep.summary.unreadable] == [broken, stripped]
    assert "status" in rep.summary.unreadable[0] and "variant" in rep.summary.unreadable[1]
    assert f"left out, invalid stored record: {broken}" in rep.render_text()
