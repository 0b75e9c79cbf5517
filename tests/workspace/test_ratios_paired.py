"""Memory and reports on a workspace recorded across several machines (issue 32): every ratio is the paired
eval verdict (or says it is unpaired and why), medians from different machines are never divided, v0 is the
baseline the user named, exploration timings are recorded as such, the task's worktrees are never
committed, and the final report names the stop condition that ended the loop.

The eval files are real H100 records (tests/fixtures/skills/h100-cli/baseline.json, the paired
tests/fixtures/timing/eval_gemm_slower_h100.json) with the GPU name, the verdict and the commit set per
step, as an eval on another machine writes them."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

FIX = Path(__file__).resolve().parent.parent / "fixtures"
KERNEL = FIX / "workspace" / "vector_add.cu"
BASELINE = json.loads((FIX / "skills" / "h100-cli" / "baseline.json").read_text())
PAIRED = json.loads((FIX / "timing" / "eval_gemm_slower_h100.json").read_text())["record"]


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def ws(tmp_path: Path, run_cli: Any) -> Path:
    root = tmp_path / "wsroot"
    r = run_cli(
        "--json", "workspace", "init", "vadd", "--kernel", str(KERNEL), "--platform", "H100",
        "--framework", "cuda", "--allow-tbd", "--dtype", "fp32", "--shape", "N=67108864", "--root", str(root),
    )  # fmt: skip
    assert r.code == 0, r.err
    ws = root / "vadd"
    tree = ws / ".kernelpilot" / "tasks" / "vadd" / ".baseline-tree"  # eval's worktree of the baseline
    tree.mkdir(parents=True)
    _git(tree, "init", "-q")
    (tree / "vector_add.cu").write_text("// the baseline commit's kernel\n")
    return ws


def _task(ws: Path) -> Path:
    return ws / ".kernelpilot" / "tasks" / "vadd"


def _baseline_json(ws: Path, gpu: str, created: str) -> None:
    base = copy.deepcopy(BASELINE)
    base["commit"] = _git(ws, "rev-parse", "HEAD").strip()  # refreshed on a clean tree at the parent
    base["created"] = created
    base["environment"]["gpus"][0]["name"] = gpu
    (_task(ws) / "baseline.json").write_text(json.dumps(base))


def _result(ws: Path, gpu: str, created: str, **fields: Any) -> str:
    rec = copy.deepcopy(PAIRED)
    rec.update(created=created, **fields)
    rec["environment"]["gpus"][0]["name"] = gpu
    (_task(ws) / "result.json").write_text(json.dumps(rec))
    return str(_task(ws) / "result.json")


def _create(run_cli: Any, ws: Path, line: str, *args: str) -> dict[str, Any]:
    with (ws / "vector_add.cu").open("a") as fh:
        fh.write(line + "\n")
    r = run_cli("--json", "memory", "create", "--workspace", str(ws), *args)
    assert r.code == 0, r.err
    return dict(json.loads(r.out)["record"])


def test_ratios_across_machines_are_the_paired_verdicts(ws: Path, run_cli: Any) -> None:
    # an exploration timing first: recorded as such, never v0, never a parent
    explore = _create(
        run_cli, ws, "// try", "--change", "try BLOCK=512", "--kind", "exploration", "--median", "1500"
    )
    assert explore["version"] == 1 and explore["kind"] == "exploration"
    # the baseline the user named, measured on machine A (an H100): v0
    (_task(ws) / "baseline.json").write_text(json.dumps({**BASELINE, "created": "2026-11-25T00:00:00Z"}))
    v0 = _create(
        run_cli, ws, "// b", "--change", "baseline", "--eval-result", str(_task(ws) / "baseline.json")
    )
    assert v0["version"] == 0 and v0["kind"] == "baseline" and v0["parent"] is None
    assert v0["performance"]["vs_baseline"] == 1.0 and "H100" in v0["performance"]["machine"]
    # v2 on machine B (an H200): paired against v0's kernel, 1.25x; the medians (other machine) disagree
    _baseline_json(ws, "NVIDIA H200", "2026-11-25T01:00:00Z")
    med0 = BASELINE["stats"]["median"]
    res = _result(
        ws, "NVIDIA H200", "2026-11-25T01:05:00Z", status="improved", speedup=1.25, candidate_median=med0
    )
    v2 = _create(run_cli, ws, "// v2", "--change", "float4 loads", "--eval-result", res)
    p2 = v2["performance"]
    assert v2["version"] == 2 and v2["parent"] == 0
    assert p2["vs_parent"] == 1.25 and p2["vs_parent_basis"].startswith("paired: eval verdict improved 1.25x")
    assert p2["vs_baseline"] == 1.25 and p2["eval"]["method"] == "paired"
    # v3 on machine C (an A100): paired 0.990x neutral against v2's kernel; its median / v2's would say 0.5x
    _baseline_json(ws, "NVIDIA A100", "2026-11-25T02:00:00Z")
    res = _result(
        ws, "NVIDIA A100", "2026-11-25T02:05:00Z", status="neutral", speedup=0.99, candidate_median=2 * med0
    )
    v3 = _create(
        run_cli, ws, "// v3", "--change", "unroll 2", "--eval-result", res, "--expected-speedup", "1.05"
    )
    p3 = v3["performance"]
    assert p3["vs_parent"] == 0.99 and p3["vs_parent_basis"].startswith("paired")
    assert p3["vs_baseline"] == round(1.25 * 0.99, 6) and p3["vs_baseline_basis"].startswith(
        "paired verdicts chained"
    )
    # v4 with an unpaired eval on machine D: medians of different machines are not divided
    res = _result(
        ws, "NVIDIA L40S", "2026-11-25T03:05:00Z", status="improved", method="unpaired", speedup=1.1
    )
    v4 = _create(run_cli, ws, "// v4", "--change", "grid-stride", "--eval-result", res)
    p4 = v4["performance"]
    assert p4["vs_parent"] is None and "different machines" in p4["vs_parent_basis"]
    assert p4["vs_parent_basis"].startswith("unpaired: the eval was unpaired")
    assert p4["vs_baseline"] is None and "different machines" in p4["vs_baseline_basis"]
    # the summary and the final report carry the same ratios; the report names what ended the loop
    r = run_cli("--json", "memory", "summary", "--workspace", str(ws))
    summary = json.loads(r.out)
    by_v = {e["version"]: e for e in summary["entries"]}
    assert summary["baseline_version"] == 0 and by_v[3]["vs_parent"] == 0.99 and by_v[2]["vs_parent"] == 1.25
    r = run_cli("--json", "report", "--workspace", str(ws), "--stop-reason", "budget spent: 5 GPU runs")
    assert r.code == 0, r.err
    md = (ws / json.loads(r.out)["markdown"]).read_text()
    assert "**The loop ended on:** budget spent: 5 GPU runs." in md
    assert "- v3: vs parent 0.99x, paired: eval verdict neutral 0.99x" in md
    assert "| v3 | 1.05x | 0.99x |" in md  # the claim is judged on the paired ratio
    assert "different machines" in md and "(v0:" in md
    # nothing of the task's worktree was committed: no gitlink in the workspace's history
    assert "160000" not in _git(ws, "ls-files", "-s")
    assert ".baseline-tree" not in _git(ws, "log", "--name-only", "--format=")


def test_a_kernel_other_than_the_parents_is_not_its_paired_ratio(ws: Path, run_cli: Any) -> None:
    (_task(ws) / "baseline.json").write_text(json.dumps({**BASELINE, "created": "2026-11-25T00:00:00Z"}))
    _create(run_cli, ws, "// b", "--change", "baseline", "--eval-result", str(_task(ws) / "baseline.json"))
    _create(run_cli, ws, "// v1", "--change", "float4", "--median", "900")
    # the task's baseline.json still holds v0's commit: the eval paired against v0, not v1 (the parent)
    base = copy.deepcopy(BASELINE)
    base.update(
        commit=_git(ws, "rev-list", "--max-parents=0", "HEAD").strip(), created="2026-11-25T00:30:00Z"
    )
    (_task(ws) / "baseline.json").write_text(json.dumps(base))
    res = _result(ws, "NVIDIA H100 80GB HBM3", "2026-11-25T01:05:00Z", status="improved", speedup=1.4)
    v2 = _create(run_cli, ws, "// v2", "--change", "unroll", "--eval-result", res)
    basis = v2["performance"]["vs_parent_basis"]
    assert basis.startswith("unpaired: the eval's baseline commit") and "than v1" in basis
    assert v2["performance"]["vs_parent"] != 1.4
