"""Issue 41: the citation audit cannot be fooled. A cited value that is not finite or out of any float's
range is forged (it audited clean: `inf <= 1e-9 * inf`); a cited path that leaves the wiki root (absolute
after the prefix, `..`, a link out) is a problem and is never followed; the citation pattern is linear on
any line (a 60,000-character identifier run took 13 s).
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernelpilot.wiki import audit_paths, load_wiki
from kernelpilot.wiki.audit import CITATION_RE, absurd_value, find_citations

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
H100 = FIX / "gpu-wiki-index" / "nvidia" / "h100-sxm5.md"
REPO = Path(__file__).resolve().parents[2]


def _line_of(path: Path, metric: str) -> int:
    for i, ln in enumerate(path.read_text().splitlines(), start=1):
        if ln.startswith(f"- {metric}: "):
            return i
    raise AssertionError(metric)


BW = _line_of(H100, "memory_bandwidth_tb_s")


def _audit(tmp_path: Path, text: str, wiki_root: Path = FIX / "gpu-wiki-index"):  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "plan.md").write_text(text)
    return audit_paths([ws], load_wiki([wiki_root], include_bundled=False), history=False)


@pytest.mark.parametrize(
    "value",
    [
        "1e999",
        "-1e999",
        "1e309",
        "9" * 400,
        "inf",
        "-Infinity",
        "nan",
        "NaN",
        "1e-400",
        "0." + "0" * 60 + "1",
    ],
)
def test_non_finite_and_out_of_range_values_are_forged(tmp_path: Path, value: str) -> None:
    res = _audit(
        tmp_path, f"memory_bandwidth_tb_s: {value} TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}\n"
    )
    assert res.citations_checked == 1 and not res.ok
    (p,) = res.problems
    assert p.kind == "forged" and "no wiki line states it" in p.reason


def test_the_true_value_still_audits_clean_and_a_wrong_finite_one_is_forged(tmp_path: Path) -> None:
    ok = _audit(tmp_path, f"memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}\n")
    assert ok.ok and ok.citations_ok == 1
    big = _audit(tmp_path, f"memory_bandwidth_tb_s: 1e300 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}\n")
    assert [p.kind for p in big.problems] == ["forged"]  # finite and in range, just not the line's value


def test_absurd_value_rules() -> None:
    assert absurd_value("3.35") is None and absurd_value("0") is None and absurd_value("0.0e5") is None
    assert absurd_value('"HBM3"') is None
    assert "digits" in (absurd_value("1" * 41) or "")
    assert "finite" in (absurd_value("1e309") or "") and "finite" in (absurd_value("nan") or "")
    assert "reads as 0" in (absurd_value("1e-400") or "")


def test_paths_leaving_the_wiki_root_are_problems_never_followed(tmp_path: Path) -> None:
    wiki = tmp_path / "w" / "gpu-wiki-index"
    shutil.copytree(FIX / "gpu-wiki-index", wiki)
    outside = tmp_path / "outside.md"  # states the cited value: an audit that followed the path would pass
    outside.write_text("\n" * (BW - 1) + H100.read_text().splitlines()[BW - 1] + "\n")
    (wiki / "nvidia" / "link.md").symlink_to(outside)
    cites = [
        f"gpu-wiki-index/{outside}",  # absolute after the prefix (gpu-wiki-index//tmp/...)
        f"gpu-wiki-index/../../{outside.name}",
        "gpu-wiki-index/nvidia/link.md",  # a link out of the root
    ]
    text = "".join(f"memory_bandwidth_tb_s: 3.35 TB/s <- {c}:L{BW}\n" for c in cites)
    res = _audit(tmp_path, text, wiki)
    assert res.citations_checked == 3 and len(res.problems) == 3
    assert all(p.kind == "dangling" and "leaves the wiki root" in p.reason for p in res.problems)
    inside = _audit(
        tmp_path, f"memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}\n", wiki
    )
    assert inside.ok


def test_a_cited_file_name_over_255_bytes_is_dangling_not_an_error(tmp_path: Path) -> None:
    """Found by bench/fuzz_surfaces.py (citation_audit, seed 4177, case 199): ENAMETOOLONG from the cited
    path's stat ended the audit with exit 2 instead of a verdict."""
    res = _audit(
        tmp_path, f"memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/{'a' * 300}.md:L{BW}\n"
    )
    assert [p.kind for p in res.problems] == ["dangling"]


def test_cli_exit_1_on_a_forged_infinite_value(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "r.md").write_text(
        f"memory_bandwidth_tb_s: 1e999 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}\n"
    )
    r = run_cli("audit", str(ws), "--wiki", str(FIX / "gpu-wiki-index"), "--no-history")
    assert r.code == 1 and "FORGED r.md:L1" in r.out


def test_audit_of_a_fifo_is_a_typed_error(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    import os

    fifo = tmp_path / "plan.md"
    os.mkfifo(fifo)
    r = run_cli("audit", str(fifo), "--no-history")
    assert r.code == 2 and "not a regular file" in r.err


def test_citations_keep_their_metric_after_digits_and_capitals() -> None:
    """The anchored pattern finds what the unanchored one did: the metric starts at the first letter of a
    run of [a-z0-9_] (so `9memory_...` cites `memory_...`, `Xmemory_...` cites `memory_...`)."""
    for prefix in ("", "- ", "9", "_9", "X", "`", "(bw "):
        line = f"{prefix}memory_bandwidth_tb_s: 3.35 TB/s <- gpu-wiki-index/nvidia/h100-sxm5.md:L{BW}"
        (c,) = find_citations(line, "f.md", False)
        assert c.metric == "memory_bandwidth_tb_s" and c.text.startswith("memory_bandwidth_tb_s: 3.35")
    assert CITATION_RE.search("a9b: 1 TB/s <- w/x.md:L1")["metric"] == "a9b"  # type: ignore[index]


def _hostile_lines() -> dict[str, str]:
    """The 1 MB hostile lines bench/audit_long_lines.py times: one set, so the test covers what the bench
    measures."""
    spec = importlib.util.spec_from_file_location("audit_long_lines", REPO / "bench" / "audit_long_lines.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    lines: dict[str, str] = bench.LINES
    return lines


_LINES = _hostile_lines()


def test_a_one_megabyte_line_of_any_shape_audits_in_linear_time(tmp_path: Path) -> None:
    """Each 1 MB hostile line through `kernelpilot audit` in a fresh process. Linear, each takes well under
    a second (`bench/audit_long_lines.py` records the figure); the quadratic pattern took about an hour on
    the first one, so the subprocess limit only bounds a failing run (no wall-clock assert)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for i, line in enumerate(_LINES.values()):
        (ws / f"l{i}.md").write_text(line + " <- \n")
    r = subprocess.run(
        [sys.executable, "-m", "kernelpilot", "audit", str(ws), "--no-history"],
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(REPO / "server"), "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert f"{len(_LINES)} file" in r.stdout, r.stdout[-500:]
