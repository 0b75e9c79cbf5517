"""Issue 45's wiki side: every bundled GPU either cites each instruction-issue floor rate it needs or names it
on its `Issue-floor UNKNOWN:` line with a reason (no silent gap), `gpus --missing` lists those gaps with
the reasons, and `roofline` gives a floor on every GPU that has the lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.wiki import load_wiki
from kernelpilot.wiki.coverage import ISSUE_FLOOR, issue_floor_reasons, missing_issue_floor, vendor_of


def _silent_gaps(root: Path | None = None) -> list[str]:
    """Issue-floor keys a GPU neither cites nor names on its `Issue-floor UNKNOWN:` line."""
    wiki = load_wiki([root], include_bundled=False) if root else load_wiki()
    out = []
    for gid, entry in sorted(wiki.gpus.items()):
        reasons = issue_floor_reasons(wiki, entry)
        every = "every issue and pipe rate" in reasons
        for key in ISSUE_FLOOR[vendor_of(entry)]:
            if key not in entry.specs and key not in reasons and not every:
                out.append(f"{gid}: {key}")
            if key in entry.specs and key in reasons:
                out.append(f"{gid}: {key} is cited at L{entry.specs[key].line} and declared UNKNOWN")
    return out


def test_every_issue_floor_key_is_cited_or_declared_unknown() -> None:
    assert _silent_gaps() == []


def test_the_declaration_check_catches_a_silent_gap(tmp_path: Path) -> None:
    dst = tmp_path / "gpu-wiki-index"
    shutil.copytree(bundled_dir("gpu-wiki-index"), dst)
    f = dst / "nvidia" / "l4.md"
    f.write_text(
        "\n".join(ln for ln in f.read_text().splitlines() if not ln.startswith("- boost_clock_mhz:"))
    )
    assert _silent_gaps(dst) == ["l4: boost_clock_mhz"]


def test_which_gpus_have_a_complete_issue_floor() -> None:
    wiki = load_wiki()
    gaps = {gid: missing_issue_floor(wiki, e) for gid, e in wiki.gpus.items()}
    complete = sorted(gid for gid, (keys, _) in gaps.items() if not keys)
    assert len(wiki.gpus) == 46 and len(complete) == 37
    # the gaps, each with the file's reason
    assert gaps["h20"][0] == ["boost_clock_mhz"] and "2203 MHz" in gaps["h20"][1][0]
    assert gaps["b200"][0] == [] and gaps["rx-6900-xt"][0] == []
    assert gaps["mi308x"][0] == ["boost_clock_mhz"] and "no AMD figure" in gaps["mi308x"][1][0]
    for rdna3 in ("rx-7600", "rx-7800-xt", "rx-7900-xtx", "radeon-pro-w7900", "radeon-8060s"):
        assert gaps[rdna3][0] == ["issue_inst_per_clk_per_cu"], rdna3
    assert "no RDNA 3 source restating the front-end issue width" in gaps["rx-7900-xtx"][1][0]


def test_gpus_missing_lists_the_issue_floor_gaps_with_reasons(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("--json", "gpus", "--missing")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    rows = {g["gpu_id"]: g for g in out["gpus"]}
    assert rows["h100-pcie"]["issue_floor_missing"] == [] and rows["mi300x"]["issue_floor_missing"] == []
    assert rows["rtx-5090"]["issue_floor_missing"] == [] and rows["b300"]["issue_floor_missing"] == []
    assert rows["rx-9070-xt"]["issue_floor_missing"] == ["issue_inst_per_clk_per_cu"]
    why = [out["issue_floor_reasons"][n - 1] for n in rows["rx-9070-xt"]["issue_floor_why"]]
    assert len(why) == 1 and "no RDNA 4 source" in why[0]
    assert len(out["issue_floor_reasons"]) == len(set(out["issue_floor_reasons"]))  # each said once
    text = run_cli("gpus", "--missing").out
    assert "37 GPUs with every instruction-issue floor line cited" in text
    assert "    issue floor UNKNOWN: boost_clock_mhz [" in text  # h20, with a numbered reason
    assert "Hopper's 1980" in text


def test_a_user_wiki_line_closes_an_issue_floor_gap(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    u = tmp_path / "mine"
    u.mkdir()
    (u / "h20.md").write_text(
        "# NVIDIA H20 (gpu_id: h20)\n\n- boost_clock_mhz: 1980 MHz | source: my lab's nvidia-smi -q, "
        "Max Clocks SM, https://lab.example/h20\n"
    )
    rows = {
        g["gpu_id"]: g
        for g in json.loads(run_cli("--json", "gpus", "--missing", "--wiki", str(u)).out)["gpus"]
    }
    assert rows["h20"]["issue_floor_missing"] == []


@pytest.mark.parametrize(
    "gpu", ["l4", "l40s", "rtx-3090", "v100-pcie", "gh200", "h100-nvl", "mi250x", "mi355x"]
)
def test_issue_rates_are_complete_and_cited_on_gpus_new_to_them(gpu: str) -> None:
    """A GPU that had no issue lines before issue 45: the floor's rates are all there and cited."""
    from kernelpilot.roofline.issue import IssueRates

    rates = IssueRates(load_wiki(), gpu, wave=64)
    assert rates.inst_per_s("issue") > 0
    pipes = set(rates.per_sm)
    assert pipes >= (
        {"issue", "valu", "salu", "lds", "trans"} if rates.amd else {"issue", "fma", "alu", "shuffle", "xu"}
    )
    assert all("<- gpu-wiki-index/" in rates.citation(p) for p in pipes)
