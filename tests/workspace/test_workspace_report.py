"""Reports from a real workspace: Markdown content, self-contained HTML, and headless Chromium."""

from __future__ import annotations

import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from tests.browser import screenshot
from tests.workspace.cited import GPU

KERNEL = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "vector_add.cu"


def _chromium(page: Path, tmp: Path) -> tuple[list[str], Path]:
    return screenshot(page, tmp)


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.fixture
def workspace(tmp_path, run_cli):
    root = tmp_path / "root"
    r = run_cli(
        "workspace",
        "init",
        "vadd",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--dtype",
        "fp32",
        "--shape",
        "N=67108864",
        "--goal",
        "reach the DRAM roof",
        "--allow-tbd",
        "--root",
        str(root),
    )
    assert r.code == 0, r.err
    ws = root / "vadd"
    steps = [
        (
            "baseline",
            "812.5",
            [
                "--profile",
                json.dumps(
                    {
                        "verdict": "memory_bound",
                        "memory_level": "dram",
                        "confidence": 0.9,
                        "hotspots": [
                            {"name": "vector_add", "share_pct": 96.5, "duration_us": 812.5},
                            {"name": "fill_kernel", "share_pct": 3.5, "duration_us": 29.4},
                        ],
                    }
                ),
            ],
        ),
        (
            "float4 loads <b>&</b>",
            "650",
            ["--expected-speedup", "1.3", "--pitfall", "tail elements => epilogue"],
        ),
        ("grid-stride loop", "700", ["--expected-speedup", "1.1"]),
        ("unroll 4", "640", ["--expected-speedup", "1.05"]),
    ]
    for i, (change, med, extra) in enumerate(steps):
        (ws / "vector_add.cu").write_text((ws / "vector_add.cu").read_text() + f"// v{i}\n")
        r = run_cli(
            "memory",
            "create",
            "--workspace",
            str(ws),
            "--change",
            change,
            "--median",
            med,
            "--spread-pct",
            "0.7",
            "--correct",
            "--max-rel-err",
            "1e-7",
            *extra,
        )
        assert r.code == 0, r.err
    assert run_cli("memory", "mask", "2", "--workspace", str(ws)).code == 0
    return ws


def test_final_report_markdown(workspace, run_cli):
    r = run_cli("--json", "report", "--workspace", str(workspace))
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["markdown"] == "reports/final.md" and out["html"] == "reports/final.html"
    assert out["versions"] == [0, 1, 3]
    md = (workspace / out["markdown"]).read_text()
    assert "Best version: **v3** — median 640 us, 1.27x over the baseline (v0: 812.5 us)" in md
    assert "Abandoned lines of work (masked, not counted): v2." in md
    assert "| `vector_add` | 96.5% | 812.5 us |" in md
    assert "| v1 | 1.30x | 1.25x | 0.962 | met |" in md  # claim vs measured
    assert "grid-stride" not in md  # masked v2 is skipped
    # v3's parent is the masked v2 (700 us): measured 700/640 = 1.09x vs claim 1.05x
    assert "| v3 | 1.05x | 1.09x |" in md
    for section in (
        "## Hotspots",
        "## History",
        "## Claim vs measured",
        "## Hardware Spec",
        "## Stop Conditions",
    ):
        assert section in md
    r = run_cli("memory", "summary", "--workspace", str(workspace))
    assert r.code == 0


def test_baseline_and_iteration_reports(workspace, run_cli):
    r = run_cli("--json", "report", "--workspace", str(workspace), "--kind", "baseline", "--no-html")
    assert r.code == 0, r.err
    md = (workspace / "reports" / "baseline.md").read_text()
    assert (
        "## Baseline (v0)" in md and "median 812.5 us" in md and "profile verdict: memory_bound (dram)" in md
    )
    assert json.loads(r.out)["html"] is None
    r = run_cli("--json", "report", "--workspace", str(workspace), "--kind", "iteration", "--version", "1")
    assert r.code == 0, r.err
    md = (workspace / "reports" / "iteration-v1.md").read_text()
    assert "float4 loads <b>&</b>" in md and "tail elements → epilogue" in md
    r = run_cli("report", "--workspace", str(workspace), "--kind", "iteration", "--version", "2")
    assert r.code != 0 and "v2 is not an unmasked" in r.err


def test_html_is_self_contained_and_well_formed(workspace, run_cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "kernelpilot.wiki", None)  # as if the wiki were absent
    assert run_cli("report", "--workspace", str(workspace)).code == 0
    html = (workspace / "reports" / "final.html").read_text()
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert not re.search(r"""(src|href)\s*=|url\(""", html)
    assert "float4 loads &lt;b&gt;&amp;&lt;/b&gt;" in html  # user text escaped
    svgs = re.findall(r"<svg.*?</svg>", html, flags=re.S)
    assert svgs, "speed-up chart missing"
    for svg in svgs:
        ET.fromstring(svg)  # well-formed XML
    speed = next(s for s in svgs if 'class="chart speedup"' in s)
    assert speed.count("<rect x=") == 1 + 3  # background + one bar per unmasked version
    assert ">1.27x</text>" in speed  # v3: 812.5/640
    # no cited peaks without the wiki: the roofline chart says TBD instead of drawing invented numbers
    assert "chart roofline" not in html and "TBD" in html


@pytest.mark.needs_tool("chromium")
def test_html_opens_in_headless_chromium_without_console_errors(workspace, run_cli, tmp_path):
    assert run_cli("report", "--workspace", str(workspace)).code == 0
    page = workspace / "reports" / "final.html"
    console, shot = _chromium(page, tmp_path)
    assert console == []
    assert shot.is_file() and shot.stat().st_size > 20_000
    assert _png_size(shot) == (1280, 1600)


@pytest.mark.needs_tool("chromium")
def test_real_wiki_roofline_page_in_chromium(tmp_path, run_cli):
    root = tmp_path / "root"
    r = run_cli(
        "workspace",
        "init",
        "g",
        "--kernel",
        str(KERNEL),
        "--platform",
        GPU,
        "--framework",
        "cuda",
        "--dtype",
        "bf16",
        "--flops",
        "1.374e11",
        "--bytes-moved",
        "1.0e8",
        "--root",
        str(root),
    )
    assert r.code == 0, r.err
    ws = root / "g"
    for change, med in (("baseline", "900"), ("tiles", "450"), ("wgmma", "320")):
        assert (
            run_cli("memory", "create", "--workspace", str(ws), "--change", change, "--median", med).code == 0
        )
    assert run_cli("report", "--workspace", str(ws)).code == 0
    html = (ws / "reports" / "final.html").read_text()
    roof = re.search(r'<svg[^>]*class="chart roofline".*?</svg>', html, flags=re.S)
    assert roof is not None
    ET.fromstring(roof.group(0))
    assert roof.group(0).count("<circle") == 3
    console, shot = _chromium(ws / "reports" / "final.html", tmp_path)
    assert console == [] and shot.stat().st_size > 20_000


@pytest.mark.needs_tool("chromium")
def test_console_error_detection_catches_a_deliberate_error(tmp_path):
    """The detector must see an uncaught exception and a console.error, else a clean run means nothing."""
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<!DOCTYPE html><html><body><p>x</p><script>console.error('deliberate');"
        "notDefinedAnywhere();</script></body></html>"
    )
    console, shot = _chromium(bad, tmp_path)
    assert any("deliberate" in ln for ln in console)
    assert any("Uncaught ReferenceError" in ln for ln in console)
    assert shot.is_file()


def test_html_report_with_att_section(workspace, run_cli):
    att = Path(__file__).resolve().parents[1] / "fixtures/profile/att/big/ui_output_agent_38430_dispatch_44"
    r = run_cli("report", "--workspace", str(workspace), "--att-dir", str(att))
    assert r.code == 0, r.err
    html = (workspace / "reports" / "final.html").read_text()
    sec = html[html.index("<h2>Thread trace (AMD ATT)</h2>") : html.index("<h2>Hardware Spec</h2>")]
    assert "<code>flash_attn_func_kernel_0</code>: 32 sampled waves" in sec and "stall 1677652 (58.8%)" in sec
    assert "<td>VMEM-wait</td><td>490580</td><td>29.2%</td>" in sec and "<th>STALL</th>" in sec
    assert "<td>11448</td><td><code>s_waitcnt vmcnt(0)</code></td><td>248</td><td>142908</td>" in sec
    assert "<script" not in sec.lower()
    ET.fromstring(f"<div>{sec}</div>")  # well-formed
