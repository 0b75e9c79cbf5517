"""Acceptance through the CLI: init -> iterations -> mask -> summary -> partial restart; bad input."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workspace"
KERNEL = FIX / "vector_add.cu"


def _git(ws: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=ws, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def ws(tmp_path, run_cli):
    root = tmp_path / "wsroot"
    r = run_cli(
        "--json",
        "workspace",
        "init",
        "vadd",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--dtype",
        "fp32",
        "--shape",
        "N=67108864",
        "--root",
        str(root),
    )
    assert r.code == 0, r.err
    return root / "vadd"


def _iterate(run_cli, ws: Path, line: str, *args: str) -> dict:
    with (ws / "vector_add.cu").open("a") as fh:
        fh.write(line + "\n")
    r = run_cli("--json", "memory", "create", "--workspace", str(ws), *args)
    assert r.code == 0, r.err
    return json.loads(r.out)


def test_init_layout_readme_and_git(tmp_path, run_cli):
    root = tmp_path / "root"
    r = run_cli(
        "--json",
        "workspace",
        "init",
        "gemm-1",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(root),
    )
    assert r.code == 0, r.err
    out = json.loads(r.out)
    ws = root / "gemm-1"
    assert out["workspace"] == str(ws) and out["kernel_file"] == "vector_add.cu"
    assert (ws / "vector_add.cu").read_bytes() == KERNEL.read_bytes()
    for d in ("memory", "plans", "profiles", "reports"):
        assert (ws / d).is_dir()
    assert "*.ncu-rep" in (ws / ".gitignore").read_text()
    readme = (ws / "README.md").read_text()
    for section in ("## Task Context", "## Hardware Spec", "## Roofline analysis", "## Stop Conditions"):
        assert section in readme
    assert "| dtype | TBD |" in readme and "| goal | TBD |" in readme
    assert {"dtype", "shape", "goal", "flops", "bytes_moved", "roofline", "stop_conditions"} <= set(
        out["tbd"]
    )
    # one commit, clean tree, local identity
    assert _git(ws, "log", "--oneline").count("\n") == 1
    assert _git(ws, "status", "--porcelain") == ""
    assert _git(ws, "config", "--local", "user.name").strip() == "kernelpilot"
    assert out["commit"] == _git(ws, "rev-parse", "HEAD").strip()
    cfg = json.loads((ws / "workspace.json").read_text())
    assert cfg["platform"] == "H100" and cfg["framework"] == "cuda" and cfg["dtype"] is None
    # no temp folders left beside it
    assert sorted(p.name for p in root.iterdir()) == ["gemm-1"]


def test_default_root_from_env(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("KERNELPILOT_WORKSPACES", str(tmp_path / "envroot"))
    r = run_cli(
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
    )
    assert r.code == 0, r.err
    assert (tmp_path / "envroot" / "w" / "README.md").is_file()
    r = run_cli("memory", "summary", "--workspace", "w")  # by name under the env root
    assert r.code == 0 and "0 iterations" in r.out


def test_default_root_is_cwd_subfolder(tmp_path, run_cli, monkeypatch):
    monkeypatch.delenv("KERNELPILOT_WORKSPACES", raising=False)
    monkeypatch.chdir(tmp_path)
    r = run_cli(
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
    )
    assert r.code == 0, r.err
    assert (tmp_path / "kernelpilot-workspaces" / "w" / "workspace.json").is_file()


def test_acceptance_three_iterations_mask_summary_restart(ws, run_cli):
    base = _iterate(
        run_cli,
        ws,
        "// baseline",
        "--change",
        "baseline",
        "--median",
        "100",
        "--spread-pct",
        "0.9",
        "--correct",
        "--max-rel-err",
        "0",
    )
    assert base["path"] == "memory/v0.json" and base["record"]["performance"]["vs_baseline"] == 1.0
    v1 = _iterate(
        run_cli,
        ws,
        "// v1: float4 loads",
        "--change",
        "float4 loads",
        "--median",
        "80",
        "--correct",
        "--max-rel-err",
        "1e-7",
        "--expected-speedup",
        "1.3",
        "--verdict",
        "memory_bound",
        "--pitfall",
        "misaligned tail => scalar epilogue",
    )
    v1_kernel = (ws / "vector_add.cu").read_text()
    assert v1["record"]["parent"] == 0 and v1["record"]["performance"]["vs_baseline"] == 1.25
    assert v1["record"]["pitfalls_and_fixes"] == [{"pitfall": "misaligned tail", "fix": "scalar epilogue"}]
    assert _git(ws, "show", f"{v1['record']['commit']}:vector_add.cu") == v1_kernel
    _iterate(run_cli, ws, "// v2: grid-stride", "--change", "grid-stride loop", "--median", "90", "--correct")
    v3 = _iterate(run_cli, ws, "// v3: unroll", "--change", "unroll 4", "--median", "85", "--correct")
    assert v3["record"]["parent"] == 2

    r = run_cli("memory", "mask", "2", "--workspace", str(ws), "--reason", "slower than v1")
    assert r.code == 0, r.err
    r = run_cli("--json", "memory", "summary", "--workspace", str(ws))
    summary = json.loads(r.out)
    assert [e["version"] for e in summary["entries"]] == [0, 1, 3]
    assert summary["masked_versions"] == [2]
    assert (
        summary["best_version"] == 1 and summary["latest_version"] == 3 and summary["baseline_version"] == 0
    )
    r = run_cli("memory", "summary", "--workspace", str(ws))
    assert "masked (skipped): v2" in r.out and "grid-stride" not in r.out
    # reads skip masked versions
    r = run_cli("memory", "read", "--workspace", str(ws), "--version", "2")
    assert r.code != 0 and "masked" in r.err
    r = run_cli("--json", "memory", "read", "--workspace", str(ws), "--version", "2", "--include-masked")
    assert json.loads(r.out)["record"]["mask_reason"] == "slower than v1"

    r = run_cli("--json", "memory", "restart", "--workspace", str(ws), "--from", "2")
    assert r.code == 0, r.err
    res = json.loads(r.out)
    assert res["masked"] == [3] and res["restored_version"] == 1
    assert (ws / "vector_add.cu").read_text() == v1_kernel
    assert _git(ws, "status", "--porcelain") == ""
    r = run_cli("--json", "memory", "read", "--workspace", str(ws))
    assert json.loads(r.out)["record"]["version"] == 1
    r = run_cli("--json", "memory", "summary", "--workspace", str(ws))
    assert [e["version"] for e in json.loads(r.out)["entries"]] == [0, 1]
    # next iteration continues from v1 with a fresh number
    v4 = _iterate(run_cli, ws, "// v4", "--change", "try again", "--median", "70")
    assert v4["record"]["version"] == 4 and v4["record"]["parent"] == 1
    # unmask brings a version back
    r = run_cli("--json", "memory", "unmask", "3", "--workspace", str(ws))
    assert r.code == 0 and json.loads(r.out)["record"]["masked"] is False


def test_update_deep_merges_and_validates(ws, run_cli):
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "10")
    r = run_cli(
        "--json",
        "memory",
        "update",
        "--workspace",
        str(ws),
        "--version",
        "0",
        "--patch",
        '{"profile": {"verdict": "memory_bound", "memory_level": "dram"}, "notes": "ncu run 1"}',
    )
    assert r.code == 0, r.err
    rec = json.loads((ws / "memory" / "v0.json").read_text())
    assert rec["profile"]["verdict"] == "memory_bound" and rec["performance"]["median"] == 10
    assert rec["updated"] and rec["notes"] == "ncu run 1"
    r = run_cli(
        "memory",
        "update",
        "--workspace",
        str(ws),
        "--version",
        "0",
        "--patch",
        '{"performance": {"spread_pct": -1}}',
    )
    assert r.code == 2 and "performance.spread_pct" in r.err
    assert json.loads((ws / "memory" / "v0.json").read_text()) == rec  # unchanged
    r = run_cli("memory", "update", "--workspace", str(ws), "--version", "0", "--patch", '{"masked": true}')
    assert r.code == 2 and "masked" in r.err
    assert _git(ws, "status", "--porcelain") == ""


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize("name", ["a/b", "../evil", "..", "x..y", "a\\b", "", ".hidden", "sp ace"])
def test_bad_names_are_typed_errors(tmp_path, run_cli, name):
    root = tmp_path / "root"
    r = run_cli(
        "--json",
        "workspace",
        "init",
        name,
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(root),
    )
    assert r.code == 2
    err = json.loads(r.err)
    assert err["type"] == "WorkspaceNameError", err
    assert not root.exists() or list(root.iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_existing_nonempty_target_refused_and_untouched(ws, run_cli):
    before = _git(ws, "rev-parse", "HEAD")
    r = run_cli(
        "--json",
        "workspace",
        "init",
        "vadd",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(ws.parent),
    )
    assert r.code == 1 and json.loads(r.err)["type"] == "WorkspaceExistsError"
    assert _git(ws, "rev-parse", "HEAD") == before
    assert sorted(p.name for p in ws.parent.iterdir()) == ["vadd"]


def test_existing_empty_target_is_used(tmp_path, run_cli):
    (tmp_path / "root" / "w").mkdir(parents=True)
    r = run_cli(
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(tmp_path / "root"),
    )
    assert r.code == 0, r.err
    assert (tmp_path / "root" / "w" / ".git").is_dir()


def test_missing_kernel_is_typed_and_leaves_nothing(tmp_path, run_cli):
    root = tmp_path / "root"
    r = run_cli(
        "--json",
        "workspace",
        "init",
        "w",
        "--kernel",
        str(tmp_path / "nope.cu"),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(root),
    )
    assert r.code == 2
    err = json.loads(r.err)
    assert err["type"] == "InputFileError" and "nope.cu" in err["message"]
    assert not (root / "w").exists()


def test_failure_midway_leaves_nothing(tmp_path, run_cli, monkeypatch):
    from kernelpilot.foundation.errors import ToolFailedError
    from kernelpilot.workspace import gitops

    def broken_commit(*a, **k):
        raise ToolFailedError("git exited with code 128", "test", returncode=128, stderr_tail="simulated")

    monkeypatch.setattr(gitops, "commit_all", broken_commit)
    root = tmp_path / "root"
    r = run_cli(
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        "H100",
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(root),
    )
    assert r.code == 1 and "simulated" in r.err
    assert list(root.iterdir()) == []  # neither the target nor the temp folder


def test_memory_file_failing_schema_names_field_path(ws, run_cli):
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "10")
    shutil.copy(FIX / "memory_v1_bad_type.json", ws / "memory" / "v1.json")
    for args in (("summary",), ("read", "--version", "1"), ("read",)):
        r = run_cli("--json", "memory", *args, "--workspace", str(ws))
        assert r.code == 2, args
        err = json.loads(r.err)
        assert err["type"] == "MemorySchemaError"
        assert "memory/v1.json" in err["message"] and "performance.median" in err["message"]
    (ws / "memory" / "v1.json").write_text("{not json")
    r = run_cli("memory", "read", "--workspace", str(ws), "--version", "1")
    assert r.code == 2 and "not valid JSON" in r.err


def test_bad_memory_input_is_not_written(ws, run_cli):
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--pitfall", "no arrow here")
    assert r.code == 2 and "pitfall => fix" in r.err
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--profile", '{"confidence": 7}')
    assert r.code == 2 and "profile.confidence" in r.err
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--median", "-1")
    assert r.code == 2 and "--median" in r.err
    assert sorted(p.name for p in (ws / "memory").iterdir()) == [".gitkeep"]
    assert _git(ws, "status", "--porcelain") == ""
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--version", "0")
    assert r.code == 0
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "again", "--version", "0")
    assert r.code == 1 and "already exists" in r.err


def test_restart_refuses_dirty_tree(ws, run_cli):
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "10")
    _iterate(run_cli, ws, "// v1", "--change", "v1", "--median", "9")
    (ws / "vector_add.cu").write_text("// uncommitted edit\n")
    r = run_cli("--json", "memory", "restart", "--workspace", str(ws), "--from", "1")
    assert r.code == 1
    err = json.loads(r.err)
    assert err["type"] == "DirtyTreeError" and "vector_add.cu" in err["message"]
    assert (ws / "vector_add.cu").read_text() == "// uncommitted edit\n"
    assert json.loads((ws / "memory" / "v1.json").read_text())["masked"] is False
    (ws / "vector_add.cu").unlink()
    (ws / "stray.txt").write_text("untracked")
    _git(ws, "checkout", "--", "vector_add.cu")
    r = run_cli("--json", "memory", "restart", "--workspace", str(ws), "--from", "1")
    assert r.code == 1 and "stray.txt" in json.loads(r.err)["message"]


def test_restart_to_initial_kernel_and_unknown_versions(ws, run_cli):
    original = (ws / "vector_add.cu").read_text()
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "10")
    r = run_cli("--json", "memory", "restart", "--workspace", str(ws), "--from", "0")
    assert r.code == 0, r.err
    assert json.loads(r.out)["restored_version"] is None
    assert (ws / "vector_add.cu").read_text() == original
    r = run_cli("memory", "restart", "--workspace", str(ws), "--from", "7")
    assert r.code == 1 and "no memory version >= v7" in r.err


def test_unknown_workspace_is_typed(tmp_path, run_cli):
    r = run_cli("--json", "memory", "summary", "--workspace", str(tmp_path / "nowhere"))
    assert r.code == 1 and json.loads(r.err)["type"] == "WorkspaceNotFoundError"


def test_plan_written_and_committed(ws, run_cli):
    r = run_cli(
        "--json",
        "plan",
        "--workspace",
        str(ws),
        "--title",
        "Vectorize loads!",
        "--hypothesis",
        "DRAM-bound at 55% of peak",
        "--steps",
        "float4 loads",
        "--steps",
        "unroll 2",
        "--expected-speedup",
        "1.3",
        "--risks",
        "misaligned tails",
    )
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["path"] == "plans/v0-vectorize-loads.md" and out["version"] == 0
    text = (ws / out["path"]).read_text()
    assert "1. float4 loads\n2. unroll 2" in text and "1.30x" in text and "## Stop Conditions" in text
    assert _git(ws, "status", "--porcelain") == ""


def test_memory_create_from_eval_result(ws, run_cli):
    _iterate(run_cli, ws, "// b", "--change", "baseline", "--median", "840")
    shutil.copy(FIX / "eval_result_improved.json", ws / "profiles" / "result.json")
    rec = _iterate(run_cli, ws, "// v1", "--change", "float4", "--eval-result", "profiles/result.json")[
        "record"
    ]
    perf = rec["performance"]
    assert perf["median"] == 640.0 and perf["unit"] == "us" and perf["samples"] == 5
    assert perf["spread_pct"] == round((641.0 - 639.5) / 640.0 * 100, 3)
    assert perf["vs_baseline"] == 1.3125 and perf["source"] == "profiles/result.json"
    assert rec["correctness"]["passed"] is None
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--eval-result", "nope.json")
    assert r.code == 2 and "nope.json" in r.err
    r = run_cli("memory", "create", "--workspace", str(ws), "--change", "x", "--eval-result", str(KERNEL))
    assert r.code == 2 and "not readable JSON" in r.err
