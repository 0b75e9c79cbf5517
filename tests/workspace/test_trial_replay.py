"""Replay of issue 27's trial on recorded H100 captures (tests/fixtures/suggest/elementwise_h100): a
too-small-block Triton SwiGLU (BLOCK=64, 16-bit loads), its fix (BLOCK=1024, 128-bit loads) and a neutral
next step (BLOCK=2048), each with its real ncu full-set profile, `isa fit` facts and `kernelpilot time`
median, the copy ceiling measured on the same box. Step 0 fills the stop conditions from the measured
ceiling; the slow kernel gets narrow access first; the fixed one MET and `stop_or_fuse` together; the neutral
iteration is reverted and stays visible; the final report states the stop verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "suggest" / "elementwise_h100"
WIKI = str(FIX / "wiki")
SWIGLU = {"op": "elementwise", "numel": 8192 * 14336, "inputs": 2, "outputs": 1}


def _median(name: str) -> str:
    doc: dict[str, Any] = json.loads((FIX / "time" / f"{name}.json").read_text())
    return f"{float(doc['cold']['stats']['median']):.2f}"


def _suggest(run_cli, tmp: Path, kernel: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    r = run_cli(
        "--json", "bottleneck", str(FIX / "ncu" / "all_raw.csv"), "--kernel", kernel,
        "--isa-facts-json", str(FIX / "isa" / f"fit_{kernel}.json"), "--wiki", WIKI,
    )  # fmt: skip
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    doc["verdicts"] = [v for v in doc["verdicts"] if v["kernel"] == kernel]
    path = tmp / f"verdict_{kernel}.json"
    path.write_text(json.dumps(doc))
    r = run_cli("--json", "suggest", "--bottleneck", str(path))
    assert r.code == 0, r.err
    out: dict[str, Any] = json.loads(r.out)
    out["verdict"] = doc["verdicts"][0]
    return out


def _iterate(run_cli, ws: Path, change: str, median: str, block: int) -> None:  # type: ignore[no-untyped-def]
    kernel = ws / "kernels.py"
    kernel.write_text(kernel.read_text() + f"# BLOCK={block}\n")
    r = run_cli(
        "memory", "create", "--workspace", str(ws), "--change", change, "--median", median, "--correct"
    )
    assert r.code == 0, r.err


def test_trial_replay(tmp_path, run_cli) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "kernels.py"
    shutil.copy(FIX / "src" / "kernels.py", src)
    root = tmp_path / "root"
    r = run_cli(
        "--json", "workspace", "init", "swiglu", "--kernel", str(src), "--platform", "H100", "--framework",
        "triton", "--dtype", "bf16", "--shape", "T=8192,H=14336", "--roofline-args", json.dumps(SWIGLU),
        "--wiki", WIKI, "--root", str(root),
    )  # fmt: skip
    assert r.code == 0, r.err
    ws = root / "swiglu"
    readme = (ws / "README.md").read_text()
    assert "90% of the measured memory roof" in readme and "spec target, shown beside and not used" in readme

    # baseline: BLOCK=64 -> narrow access first, no stop_or_fuse
    _iterate(run_cli, ws, "baseline BLOCK=64", _median("swiglu_slow"), 64)
    slow = _suggest(run_cli, tmp_path, "swiglu_block64")
    assert slow["verdict"]["causes"][0]["rule"] == "narrow_global_loads"
    assert slow["suggestions"][0]["lever"] == "vectorize_loads"
    assert "stop NOT MET" in slow["stop_verdicts"][0]
    assert "stop_or_fuse" not in [s["lever"] for s in slow["suggestions"]]

    # v1: BLOCK=1024 -> MET and stop_or_fuse together
    _iterate(run_cli, ws, "BLOCK 64 -> 1024 (128-bit loads)", _median("swiglu_fast"), 1024)
    fast = _suggest(run_cli, tmp_path, "swiglu_block1024")
    assert fast["verdict"]["stop"]["status"] == "MET" and fast["verdict"]["stop"]["pct_of_ceiling"] >= 90
    assert fast["suggestions"][0]["lever"] == "stop_or_fuse" and "stop MET" in fast["stop_verdicts"][0]
    r = run_cli("roofline", "H100", "--op", "elementwise", "--numel", str(8192 * 14336), "--dtype", "bf16",
                "--wiki", WIKI, "--measured-time-us", _median("swiglu_fast"))  # fmt: skip
    assert r.code == 0 and "stop verdict MET" in r.out

    # v2: the neutral step the trial spent an iteration on, reverted but kept visible
    _iterate(run_cli, ws, "BLOCK 1024 -> 2048", _median("swiglu_neutral"), 2048)
    r = run_cli("memory", "revert", "--workspace", str(ws), "--version", "2", "--status", "neutral",
                "--reason", "neutral: already MET at the measured copy ceiling")  # fmt: skip
    assert r.code == 0, r.err

    r = run_cli("--json", "report", "--workspace", str(ws))
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    md = (ws / rep["markdown"]).read_text()
    assert "**Stop verdict (v1): MET** — stop verdict MET: memory-bound" in md
    assert "Reverted iterations" in md and "v2 — BLOCK 1024 -> 2048: neutral" in md
    assert rep["audit"] == "passed"
