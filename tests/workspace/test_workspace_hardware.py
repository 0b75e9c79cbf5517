"""Hardware Spec / Roofline / Stop Conditions: cited lines only, TBD otherwise, audit on every write."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tests.workspace.cited import GPU, bundled_wiki, cite, value_text

KERNEL = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "vector_add.cu"
CITE = re.compile(r"<- \S+:L\d+")


def _section(text: str, title: str) -> str:
    part = text.split(f"## {title}\n", 1)[1]
    return part.split("\n## ", 1)[0]


def _init(run_cli, root: Path, *extra: str, platform: str = GPU) -> tuple[int, dict | str]:
    r = run_cli(
        "--json",
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        platform,
        "--framework",
        "cuda",
        "--allow-tbd",
        "--root",
        str(root),
        *extra,
    )
    return r.code, (json.loads(r.out) if r.code == 0 else r.err)


def test_without_wiki_hardware_is_tbd_and_has_no_numbers(tmp_path, run_cli, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "kernelpilot.wiki", None)  # import fails like an unmerged module
    code, out = _init(run_cli, tmp_path, "--dtype", "bf16", "--flops", "1e9", "--bytes-moved", "1e6")
    assert code == 0, out
    readme = (tmp_path / "w" / "README.md").read_text()
    hw = _section(readme, "Hardware Spec")
    assert hw.strip().startswith("TBD") and not re.search(r"\d", hw)
    assert _section(readme, "Roofline analysis").strip().startswith("TBD")
    assert _section(readme, "Stop Conditions").strip().startswith("TBD")
    assert not CITE.search(readme)
    assert out["audit"].startswith("skipped")


def test_cited_spec_roofline_stop_conditions_pass_the_real_audit(tmp_path, run_cli):
    code, out = _init(run_cli, tmp_path, "--dtype", "bf16", "--flops", "1.37e11", "--bytes-moved", "1e8")
    assert code == 0, out
    specs = bundled_wiki().specs(GPU)
    assert out["gpu_id"] == GPU and out["spec_lines"] == len(specs) > 5 and out["audit"] == "passed"
    readme = (tmp_path / "w" / "README.md").read_text()
    hw = _section(readme, "Hardware Spec")
    spec_lines = [ln for ln in hw.splitlines() if ln.startswith("- ")]
    assert spec_lines == [f"- {cv.citation()}" for cv in specs]
    assert f"- {cite('bf16_dense_tflops')}" in spec_lines
    assert "COMPUTE-BOUND" in _section(readme, "Roofline analysis")  # 1370 FLOP/B, over the H100's ridge
    stop = _section(readme, "Stop Conditions")
    # FLOPs given without an op say nothing of tensor cores: the roofline takes the bf16 vector peak
    assert "TBD" not in stop and cite("bf16_vector_tflops") in stop
    # every line holding a digit in the Hardware Spec section is a citation
    assert all(CITE.search(ln) for ln in hw.splitlines() if re.search(r"\d", ln) and ln.startswith("- "))


def test_unknown_gpu_is_tbd(tmp_path, run_cli):
    code, out = _init(run_cli, tmp_path, "--dtype", "bf16", platform="Stubwell 9000")
    assert code == 0, out
    readme = (tmp_path / "w" / "README.md").read_text()
    assert "UNKNOWN (gpu-wiki not found)" in _section(readme, "Hardware Spec")
    assert not CITE.search(readme)


def test_no_flops_means_roofline_tbd_but_specs_cited(tmp_path, run_cli):
    code, out = _init(run_cli, tmp_path, "--dtype", "fp32")  # _init passes --allow-tbd
    assert code == 0, out
    assert out["roofline"].startswith("TBD: no op description or FLOPs and bytes moved were given")
    readme = (tmp_path / "w" / "README.md").read_text()
    for section in ("Roofline analysis", "Stop Conditions"):  # each TBD names the argument that fills it
        assert "--roofline-args" in _section(readme, section) and "--flops" in _section(readme, section)


def test_init_refuses_to_leave_roofline_tbd_and_names_the_argument(tmp_path, run_cli):
    """Step 0 as documented (cli.md, step0.md) passes --roofline-args; without it (or --allow-tbd) init
    refuses and says which argument fills Roofline and Stop Conditions."""
    base = [
        "workspace",
        "init",
        "w",
        "--kernel",
        str(KERNEL),
        "--platform",
        GPU,
        "--framework",
        "cuda",
    ]
    r = run_cli(*base, "--dtype", "fp32", "--root", str(tmp_path))
    assert r.code == 2 and "would leave Roofline and Stop Conditions TBD" in r.err
    assert '--roofline-args \'{"op": "softmax"' in r.err and "--allow-tbd" in r.err
    assert not (tmp_path / "w").exists()


def test_init_with_documented_roofline_args_from_a_file_fills_roofline_and_stop(tmp_path, run_cli):
    args = tmp_path / "op.json"  # a JSON file works like inline JSON (validation.load_json_argument)
    args.write_text('{"op": "softmax", "rows": 32768, "cols": 4096}')
    r = run_cli(
        "--json", "workspace", "init", "w", "--kernel", str(KERNEL), "--platform", "H100", "--framework",
        "triton", "--dtype", "bf16", "--root", str(tmp_path), "--roofline-args", str(args),
    )  # fmt: skip
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert (
        out["roofline"] == "computed" and "roofline" not in out["tbd"] and "stop_conditions" not in out["tbd"]
    )
    stop = _section((tmp_path / "w" / "README.md").read_text(), "Stop Conditions")
    assert "TBD" not in stop and "memory_bandwidth_tb_s: 3.35 TB/s <- " in stop
    args.write_text('{"op": "gemm", "mm": 1}')  # a key the roofline does not take: refused, named
    r = run_cli(
        "workspace", "init", "w2", "--kernel", str(KERNEL), "--platform", "H100", "--framework", "cuda",
        "--dtype", "bf16", "--root", str(tmp_path), "--roofline-args", str(args),
    )  # fmt: skip
    assert r.code == 2 and "--roofline-args rejected by the roofline: mm: is not a known field" in r.err
    assert not (tmp_path / "w2").exists()


def test_audit_failure_aborts_init_and_leaves_nothing(tmp_path, run_cli, monkeypatch):
    """A stale citation (wiki and README disagree) fails init; nothing half-created remains."""
    from kernelpilot.workspace import render

    real = render.render_readme

    def forged(config, hw):
        text, tbd = real(config, hw)
        return text.replace(f"{value_text('bf16_dense_tflops')} <-", "1999.0 TFLOP/s <-"), tbd

    monkeypatch.setattr(render, "render_readme", forged)
    code, err = _init(run_cli, tmp_path, "--dtype", "bf16")
    assert code == 1 and "CitationError" in err and "1999.0" in err
    assert list(tmp_path.iterdir()) == []


def test_guard_refuses_citations_not_from_the_wiki(tmp_path):
    from kernelpilot.foundation.errors import CitationError
    from kernelpilot.workspace import hardware, render

    hw = hardware.gather(GPU, dtype="bf16")
    f = tmp_path / "x.md"
    f.write_text(f"- {cite('bf16_dense_tflops')}\n")
    render.assert_no_uncited_specs([f], hw)
    # a real wiki line, but another GPU's: not one this workspace's wiki answer produced
    f.write_text(f"- {cite('bf16_dense_tflops', 'a100-sxm4-80gb')}\n")
    with pytest.raises(CitationError, match="did not produce"):
        render.assert_no_uncited_specs([f], hw)
    f.write_text(f"- {cite('bf16_dense_tflops').replace(':L', ':L1')}\n")  # right value, wrong line
    with pytest.raises(CitationError, match="did not produce"):
        render.assert_no_uncited_specs([f], hw)


def test_report_and_plan_pass_the_real_audit(tmp_path, run_cli):
    code, _ = _init(run_cli, tmp_path, "--dtype", "bf16", "--flops", "1.37e11", "--bytes-moved", "1e8")
    assert code == 0
    ws = tmp_path / "w"
    for change, med in (("baseline", 900.0), ("swizzle", 600.0)):
        r = run_cli("memory", "create", "--workspace", str(ws), "--change", change, "--median", str(med))
        assert r.code == 0, r.err
    r = run_cli("--json", "report", "--workspace", str(ws))
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    assert rep["audit"] == "passed"
    html = (ws / rep["html"]).read_text()
    assert f"roof: {cite('bf16_vector_tflops').replace('<-', '&lt;-')}" in html  # the roof the roofline used
    assert 'class="chart roofline"' in html
    r = run_cli("--json", "plan", "--workspace", str(ws), "--title", "t", "--hypothesis", "h")
    assert r.code == 0 and json.loads(r.out)["audit"] == "passed"


def test_real_wiki_h100_gemm_init_and_report(tmp_path, run_cli):
    gemm = json.dumps({"op": "gemm", "m": 4096, "n": 4096, "k": 4096})
    code, out = _init(
        run_cli,
        tmp_path,
        "--dtype",
        "bf16",
        "--shape",
        "M=N=K=4096",
        "--roofline-args",
        gemm,
        platform="H100 SXM5",
    )
    assert code == 0, out
    assert out["gpu_id"] == "h100-sxm5" and out["audit"] == "passed" and out["spec_lines"] > 5
    readme = (tmp_path / "w" / "README.md").read_text()
    hw = _section(readme, "Hardware Spec")
    assert "- bf16_dense_tflops: " in hw and "<- gpu-wiki-index/nvidia/h100-sxm5.md:L" in hw
    roof = _section(readme, "Roofline analysis")
    assert "COMPUTE-BOUND" in roof and "## Stop Conditions" not in roof
    stop = _section(readme, "Stop Conditions")
    assert "bf16_dense_tflops:" in stop and not stop.strip().startswith("TBD")
    cfg = json.loads((tmp_path / "w" / "workspace.json").read_text())
    assert cfg["flops"] == 2 * 4096**3  # counted by the roofline from the op description
    ws = tmp_path / "w"
    for change, med in (("baseline", "400"), ("wgmma", "180")):
        r = run_cli("memory", "create", "--workspace", str(ws), "--change", change, "--median", med)
        assert r.code == 0, r.err
    r = run_cli("--json", "report", "--workspace", str(ws))
    assert r.code == 0, r.err
    rep = json.loads(r.out)
    assert rep["audit"] == "passed"
    md = (ws / rep["markdown"]).read_text()
    assert "achieved:" in md  # the roofline got the best measured time
    from kernelpilot.wiki import audit_paths, load_wiki

    result = audit_paths([ws], load_wiki())
    assert result.ok and result.citations_checked > 30


def test_guard_reads_html_escaped_citations(tmp_path):
    from kernelpilot.foundation.errors import CitationError
    from kernelpilot.workspace import hardware, render

    hw = hardware.gather(GPU, dtype="bf16")
    page = tmp_path / "r.html"
    good = cite("bf16_dense_tflops")
    page.write_text(f"<li>{good.replace('<-', '&lt;-')}</li>\n")
    render.assert_no_uncited_specs([page], hw)
    assert render.citation_lines(page) == [good]
    forged = good.replace(value_text("bf16_dense_tflops"), "1999.0 TFLOP/s")
    page.write_text(f"<li>{forged.replace('<-', '&lt;-')}</li>\n")
    with pytest.raises(CitationError, match=r"r\.html:L1"):
        render.assert_no_uncited_specs([page], hw)


def test_report_failing_audit_leaves_no_report(tmp_path, run_cli, monkeypatch):
    import subprocess

    from kernelpilot.workspace import report

    code, _ = _init(run_cli, tmp_path, "--dtype", "bf16")
    assert code == 0
    ws = tmp_path / "w"
    assert (
        run_cli("memory", "create", "--workspace", str(ws), "--change", "baseline", "--median", "5").code == 0
    )
    real = report.render_template

    def forged(name, **ctx):
        text = real(name, **ctx)
        bf16 = value_text("bf16_dense_tflops")
        return text.replace(bf16, "1999.0 TFLOP/s") if name == "report.html.j2" else text

    monkeypatch.setattr(report, "render_template", forged)
    r = run_cli("report", "--workspace", str(ws))
    assert r.code == 1 and "citation" in r.err
    assert sorted(p.name for p in (ws / "reports").iterdir()) == [".gitkeep"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=ws, capture_output=True, text=True).stdout
    assert status == ""


def test_the_real_audit_catches_a_wiki_that_changed_under_the_workspace(tmp_path):
    """The guard (render.assert_no_uncited_specs) checks citations against what the wiki answered when the
    workspace was built; the audit (kernelpilot.wiki.audit_paths) re-reads the cited lines. A user wiki
    whose line changed afterwards passes the guard and fails the audit, naming the line."""
    from kernelpilot.foundation.errors import CitationError
    from kernelpilot.workspace import core, hardware

    user = tmp_path / "my-wiki"
    user.mkdir()
    sheet = user / "stubwell-9000.md"
    line = "- memory_bandwidth_tb_s: 2.0 TB/s | source: the lab's own bench sheet, run 7, https://example.invalid/s\n"
    sheet.write_text("# Stubwell 9000\n\n" + line)
    hw = hardware.gather("stubwell-9000", dtype="bf16", wiki_dirs=[str(user)])
    assert hw.spec_citations == ["memory_bandwidth_tb_s: 2.0 TB/s <- my-wiki/stubwell-9000.md:L3"]
    readme = tmp_path / "README.md"
    readme.write_text(f"- {hw.spec_citations[0]}\n")
    assert core.audit_files([readme], [str(user)], hw) == "passed"
    sheet.write_text("# Stubwell 9000\n\n" + line.replace("2.0 TB/s", "2.4 TB/s"))
    with pytest.raises(CitationError, match="citation audit failed on rendered files") as err:
        core.audit_files([readme], [str(user)], hw)
    assert "README.md:L1" in err.value.message
