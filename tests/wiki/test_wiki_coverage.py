"""Wiki coverage: every roofline-critical metric is cited or explicitly UNKNOWN, `gpus --missing` counts
the gaps (CLI and a real MCP client), and `doctor` says whether this machine's GPU is in the wiki."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.host.doctor import DoctorResult, GpuInfo, _wiki_matches
from kernelpilot.wiki import load_wiki
from kernelpilot.wiki.coverage import CRITICAL, critical_metrics, match_device, missing_critical

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
DECL = re.compile(r"Roofline-critical UNKNOWN: ([^.]*)\.")


def _declared(path: Path) -> list[str] | None:
    """The `Roofline-critical UNKNOWN: ...` list from the file's prose above its first section."""
    for ln in path.read_text(encoding="utf-8").splitlines():
        if ln.startswith("## "):
            return None
        m = DECL.search(ln)
        if m:
            text = m.group(1).strip()
            return [] if text == "none" else [k.strip() for k in text.split(",")]
    return None


def test_bundled_wiki_has_at_least_45_gpus() -> None:
    assert len(load_wiki().gpus) >= 45


def test_every_critical_metric_is_cited_or_declared_unknown_for_every_gpu() -> None:
    """Acceptance: for each GPU and each roofline-critical metric, either a spec line states it or the file's
    `Roofline-critical UNKNOWN:` line names it, and the declaration names nothing the file does state."""
    wiki = load_wiki()
    root = bundled_dir("gpu-wiki-index")
    problems = []
    for gid, entry in sorted(wiki.gpus.items()):
        declared = _declared(root / entry.file.split("/", 1)[1])
        if declared is None:
            problems.append(f"{entry.file}: no 'Roofline-critical UNKNOWN: ...' line")
            continue
        for key in critical_metrics(entry):
            cited = key in entry.specs
            if cited and key in declared:
                problems.append(f"{gid}: {key} is declared UNKNOWN but cited at L{entry.specs[key].line}")
            if not cited and key not in declared:
                problems.append(f"{gid}: {key} is neither cited nor declared UNKNOWN (silent gap)")
        extra = set(declared) - set(critical_metrics(entry))
        if extra:
            problems.append(f"{gid}: declares non-critical or misspelled keys {sorted(extra)}")
    assert problems == []


def test_declaration_check_catches_a_silent_gap(tmp_path: Path) -> None:
    """The check above can fail: drop a cited critical line from a copy and the gap is reported."""
    import shutil

    dst = tmp_path / "gpu-wiki-index"
    shutil.copytree(bundled_dir("gpu-wiki-index"), dst)
    f = dst / "nvidia" / "h200-sxm.md"
    text = f.read_text(encoding="utf-8")
    f.write_text("\n".join(ln for ln in text.splitlines() if not ln.startswith("- l2_cache_mb:")) + "\n")
    entry = load_wiki([dst], include_bundled=False).gpus["h200-sxm"]
    declared = _declared(f)
    assert declared == []
    assert missing_critical(entry) == ["l2_cache_mb"]


@pytest.mark.parametrize(
    ("gpu_id", "missing"),
    [
        ("h200-sxm", []),
        ("h100-sxm5", []),
        ("mi250", []),
        ("v100-pcie", []),
        ("l4", []),
        ("radeon-pro-w7900", []),
        ("rx-7900-xtx", []),
        ("radeon-8060s", []),
        ("rtx-4090", []),
        ("h20", ["l2_cache_mb"]),
        ("l40s", []),
        ("b200", ["l2_cache_mb"]),
        ("mi308x", ["bf16_dense_tflops", "fp16_dense_tflops", "fp32_vector_tflops", "memory_bandwidth_tb_s"]),
    ],
)  # fmt: skip
def test_gpus_missing_counts(run_cli, gpu_id: str, missing: list[str]) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("--json", "gpus", "--missing")
    assert r.code == 0, r.err
    rows = {g["gpu_id"]: g for g in json.loads(r.out)["gpus"]}
    assert rows[gpu_id]["missing_metrics"] == missing
    assert len(rows[gpu_id]["critical_metrics"]) == len(CRITICAL)
    text = run_cli("gpus", "--missing").out
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == [gpu_id])
    assert f"{len(missing)}/{len(CRITICAL)} UNKNOWN" in line


def test_gpus_without_missing_keeps_the_plain_listing(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("--json", "gpus")
    data = json.loads(r.out)
    assert data["missing"] is False
    assert all(g["missing_metrics"] == [] and g["critical_metrics"] == [] for g in data["gpus"])
    assert "/8 UNKNOWN" not in run_cli("gpus").out


def test_user_wiki_line_closes_a_gap_and_unknown_vendor_lists_both_keys(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    u = tmp_path / "mine"
    u.mkdir()
    (u / "h20.md").write_text(
        "# NVIDIA H20 (gpu_id: h20)\n\n- l2_cache_mb: 60 MB | source: my lab sheet, table 1, https://lab.example/h20\n"
    )
    (u / "acme-x1.md").write_text(
        "# ACME X1\n\n- memory_bandwidth_tb_s: 1.5 TB/s | source: doc, t1, https://m\n"
    )
    rows = {
        g["gpu_id"]: g
        for g in json.loads(run_cli("--json", "gpus", "--missing", "--wiki", str(u)).out)["gpus"]
    }
    assert rows["h20"]["missing_metrics"] == []
    assert "sm_count|cu_count" in rows["acme-x1"]["missing_metrics"]
    assert "memory_bandwidth_tb_s" not in rows["acme-x1"]["missing_metrics"]
    assert len(rows["acme-x1"]["missing_metrics"]) == 7


def test_gpus_missing_through_a_real_mcp_client() -> None:
    from mcp import Client

    from kernelpilot.adapters.mcp_server import build_server

    async def main() -> dict:  # type: ignore[type-arg]
        async with Client(build_server()) as client:
            res = await client.call_tool("wiki_list_gpus", {"missing": True})
            assert not res.is_error
            return res.structured_content  # type: ignore[no-any-return]

    out = anyio.run(main)
    rows = {g["gpu_id"]: g for g in out["gpus"]}
    assert rows["h20"]["missing_metrics"] == ["l2_cache_mb"]
    assert rows["h200-sxm"]["missing_metrics"] == []


def _device_names() -> list[str]:
    """GPU names exactly as nvidia-smi printed them on the device machine (fixture CSV, see PROVENANCE.md)."""
    lines = (FIX / "device-h100" / "nvidia-smi.txt").read_text().splitlines()
    return [ln.split(",")[0].strip() for ln in lines[1:] if ln.strip()]


def test_doctor_matches_the_real_device_name_and_says_what_is_missing() -> None:
    names = _device_names()
    assert names == ["NVIDIA H100 80GB HBM3"]
    matches = _wiki_matches(
        [
            GpuInfo(vendor="NVIDIA", index=0, name=names[0]),
            GpuInfo(vendor="NVIDIA", index=1, name="NVIDIA H20"),
        ],
        [],
    )
    h100, h20 = matches
    assert (h100.gpu_id, h100.missing_metrics, h100.suggestion) == ("h100-sxm5", [], "")
    assert h100.measured_count >= 5
    assert h20.gpu_id == "h20" and h20.missing_metrics == ["l2_cache_mb"]
    assert h20.suggestion.startswith("kernelpilot ceilings measure --gpu h20 --out kp-wiki/h20.md")


def test_doctor_offers_ceilings_measure_for_a_gpu_not_in_the_wiki() -> None:
    (m,) = _wiki_matches([GpuInfo(vendor="NVIDIA", index=0, name="NVIDIA H200 NVL")], [])
    assert m.gpu_id is None
    assert m.suggestion.startswith("kernelpilot ceilings measure --out kp-wiki/nvidia-h200-nvl.md")
    text = DoctorResult(tools=[], gpus=[], capabilities=[], python_packages={}, wiki=[m]).render_text()
    assert "'NVIDIA H200 NVL' is not in the gpu-wiki" in text
    assert "fill measured lines: kernelpilot ceilings measure --out kp-wiki/nvidia-h200-nvl.md" in text


def test_device_match_is_exact_and_offers_prefix_candidates_only() -> None:
    wiki = load_wiki()
    assert match_device(wiki, "Tesla T4") == ("t4", [])
    assert match_device(wiki, "AMD Instinct MI250") == ("mi250", [])
    gpu_id, close = match_device(wiki, "NVIDIA A100")
    assert gpu_id == "a100-sxm-80gb"  # the alias 'A100' is exact
    gpu_id, close = match_device(wiki, "RTX 6000")
    assert gpu_id is None and close == ["rtx-6000-ada"]


def test_citation_audit_of_the_whole_wiki_is_clean(tmp_path: Path) -> None:
    """Acceptance: every value of every GPU, cited as `<metric>: <value> <unit> <- <path>:L<line>`, audits
    ok; so do the citations the repository's docs make into the bundled wiki."""
    from kernelpilot.wiki import audit_paths

    wiki = load_wiki()
    cites = [cv.citation() for gid in sorted(wiki.gpus) for cv in wiki.specs(gid)]
    assert len(cites) > 600
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "all.md").write_text("\n".join(f"- {c}" for c in cites) + "\n")
    res = audit_paths([ws], wiki, history=False)
    counts = (res.ok, res.citations_checked, res.citations_ok)
    assert counts == (True, len(cites), len(cites)), res.problems[:3]
    docs = Path(__file__).resolve().parents[2] / "docs"
    res = audit_paths([docs], wiki, history=False)
    assert res.ok and res.citations_checked > 100, res.problems[:3]
