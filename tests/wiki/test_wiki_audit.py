"""Audit: exactly the bad citations are reported (forged, dangling, stale), in .md and .json, API and CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError
from kernelpilot.wiki import audit_paths, load_wiki

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"


def _line_of(path: Path, metric: str) -> int:
    for i, ln in enumerate(path.read_text().splitlines(), start=1):
        if ln.startswith(f"- {metric}: "):
            return i
    raise AssertionError(metric)


def _workspace(tmp_path: Path, wiki_root: Path) -> Path:
    h100 = wiki_root / "nvidia" / "h100-sxm5.md"
    bw, bf = _line_of(h100, "memory_bandwidth_tb_s"), _line_of(h100, "bf16_dense_tflops")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "plan.md").write_text(
        "# Plan\n\n"
        f"- peak: bf16_dense_tflops: 989.4 TFLOP/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{bf}\n"  # correct
        f"- bw: memory_bandwidth_tb_s: 3.9 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{bw}\n"  # forged
        # dangling: the line moved
        f"- again: memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{bw + 1}\n"
    )
    return ws


@pytest.mark.parametrize("which", ["small", "wikidata-copy", "bundled"])
def test_acceptance_one_correct_one_forged_one_dangling(tmp_path: Path, which: str) -> None:
    from kernelpilot.foundation.paths import bundled_dir

    if which == "bundled":
        root = bundled_dir("gpu-wiki-index")  # the package's own wiki: never skipped (its files ship)
        wiki = load_wiki()
    else:
        root = FIX / "gpu-wiki-index" if which == "small" else FIX / "wikidata-copy" / "gpu-wiki-index"
        wiki = load_wiki([root], include_bundled=False)
    ws = _workspace(tmp_path, root)
    res = audit_paths([ws], wiki, history=False)
    assert res.citations_checked == 3 and res.citations_ok == 1 and not res.ok
    assert [(p.kind, p.location) for p in res.problems] == [
        ("forged", "plan.md:L4"),
        ("dangling", "plan.md:L5"),
    ]
    bw = _line_of(root / "nvidia" / "h100-sxm5.md", "memory_bandwidth_tb_s")
    assert (
        res.problems[0].current
        == f"memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{bw}"
    )
    assert f"memory_bandwidth_tb_s is at L{bw}" in res.problems[1].reason


def test_dangling_missing_file_and_line_past_end(tmp_path: Path) -> None:
    root = FIX / "gpu-wiki-index"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "r.md").write_text(
        "tdp_w: 700 W <- gpu-wiki-index/nvidia/b999.md:L3\n"
        "tdp_w: 700 W <- gpu-wiki-index/nvidia/h100-sxm5.md:L9999\n"
        "tdp_w: 700 W <- otherwiki/nvidia/h100-sxm5.md:L3\n"
        "tdp_w: 700 W <- gpu-wiki-index/../secrets.md:L1\n"
    )
    res = audit_paths([ws], load_wiki([root], include_bundled=False), history=False)
    assert [p.kind for p in res.problems] == ["dangling"] * 4
    assert "L9999 does not exist" in res.problems[1].reason


def test_json_files_and_text_values(tmp_path: Path) -> None:
    root = FIX / "gpu-wiki-index"
    mt = _line_of(root / "nvidia" / "h100-sxm5.md", "memory_type")
    ws = tmp_path / "ws"
    (ws / "memory").mkdir(parents=True)
    good = f'memory_type: "HBM3" text <- gpu-wiki-index/nvidia/h100-sxm5.md:L{mt}'
    bad = f'memory_type: "HBM3e" text <- gpu-wiki-index/nvidia/h100-sxm5.md:L{mt}'
    (ws / "memory" / "v1.json").write_text(json.dumps({"notes": [good, bad]}, indent=1))
    res = audit_paths([ws], load_wiki([root], include_bundled=False), history=False)
    assert res.citations_checked == 2
    assert [(p.kind, p.location) for p in res.problems] == [("forged", "memory/v1.json:L4")]


@pytest.mark.needs_tool("git")
def test_stale_when_the_value_was_in_the_wiki_history(tmp_path: Path) -> None:
    from kernelpilot.host.toolchain import run

    wiki_root = tmp_path / "labwiki"
    wiki_root.mkdir()
    f = wiki_root / "acme-x1.md"
    f.write_text("# ACME X1\n- memory_bandwidth_tb_s: 1.5 TB/s | source: rev A sheet, t1, https://a\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    import os

    env = {**os.environ, **env}
    run(["git", "init", "-q", str(wiki_root)], env=env)
    run(["git", "-C", str(wiki_root), "add", "."], env=env)
    run(["git", "-C", str(wiki_root), "commit", "-qm", "a"], env=env)
    f.write_text("# ACME X1\n- memory_bandwidth_tb_s: 1.6 TB/s | source: rev B sheet, t1, https://a\n")
    run(["git", "-C", str(wiki_root), "commit", "-qam", "b"], env=env)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.md").write_text(
        "memory_bandwidth_tb_s: 1.5 TB/s <- labwiki/acme-x1.md:L2\n"  # stale: was true in rev A
        "memory_bandwidth_tb_s: 1.7 TB/s <- labwiki/acme-x1.md:L2\n"  # forged: never true
        "memory_bandwidth_tb_s: 1.6 TB/s <- labwiki/acme-x1.md:L2\n"  # ok
    )
    res = audit_paths([ws], load_wiki([wiki_root], include_bundled=False))
    assert [(p.kind, p.location) for p in res.problems] == [("stale", "a.md:L1"), ("forged", "a.md:L2")]


def test_audit_path_missing_is_typed(tmp_path: Path) -> None:
    with pytest.raises(InputFileError):
        audit_paths([tmp_path / "none"], load_wiki([FIX / "gpu-wiki-index"], include_bundled=False))


def test_cli_audit_exit_codes(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    wiki = tmp_path / "labwiki"
    wiki.mkdir()
    shutil.copy(FIX / "gpu-wiki-index" / "nvidia" / "h100-sxm5.md", wiki / "acme-h1.md")
    bw = _line_of(wiki / "acme-h1.md", "memory_bandwidth_tb_s")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "ok.md").write_text(f"memory_bandwidth_tb_s: 3.35 TB/s <- labwiki/acme-h1.md:L{bw}\n")
    r = run_cli("audit", str(ws), "--wiki", str(wiki))
    assert r.code == 0 and "1 ok, 0 problems" in r.out
    (ws / "bad.md").write_text(f"memory_bandwidth_tb_s: 4 TB/s <- labwiki/acme-h1.md:L{bw}\n")
    r = run_cli("audit", str(ws), "--wiki", str(wiki), "--no-history")
    assert r.code == 1 and "FORGED bad.md:L1" in r.out
