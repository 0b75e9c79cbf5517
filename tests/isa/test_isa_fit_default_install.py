"""`isa fit` without a disassembler never reads as "nothing left" (issue 42).

The default install once lacked nvdisasm, and `isa fit` said "nothing obvious from the ISA" where the dev
install found scalar 4-byte loads. Now nvdisasm is a default dependency, and where it is still missing (a
platform without the wheel, a hidden PATH) every mix-based check says it did not run and how to fix that.
These tests hide the disassembler at the toolchain seam (`kernelpilot.host.toolchain.find_tool`) and compare
with what the dev install recorded on the same cubin (tests/fixtures/profile/rootcause/isa/fit_<kernel>.json,
nvdisasm of CUDA 13.0): each recorded finding is found again or labelled "not checked" with the fix.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernelpilot.isa.api import IsaFitRequest
from kernelpilot.isa.core import isa_fit

RC_ISA = Path(__file__).resolve().parents[1] / "fixtures" / "profile" / "rootcause" / "isa"
CUBIN, PTXAS = RC_ISA / "rc_kernels.cubin", RC_ISA / "ptxas_cubin.txt"
RECORDED = sorted(RC_ISA.glob("fit_*.json"))
# a mix-based finding of the dev install -> the label the default install prints instead
MIX_FINDINGS = {"scalar ": "vector width of global loads", "matrix units idle": "matrix-unit use"}


@pytest.fixture
def no_disassembler(monkeypatch: pytest.MonkeyPatch) -> None:
    from kernelpilot.host import toolchain

    real = toolchain.find_tool
    hidden = {"nvdisasm", "cuobjdump"}
    monkeypatch.setattr(
        toolchain, "find_tool", lambda name, env=None: None if name in hidden else real(name, env)
    )


def _recorded(path: Path) -> tuple[str, dict[str, Any]]:
    rep: dict[str, Any] = json.loads(path.read_text())["reports"][0]
    return rep["kernel"], rep


def _fit_like(rep: dict[str, Any]) -> Any:
    occ = rep["occupancy"]
    req = IsaFitRequest(
        file=str(CUBIN),
        kernel=f"^{rep['kernel']}$",
        block_size=occ["block_size"],
        dynamic_shared_bytes=occ["dynamic_shared_bytes"],
        ptxas_log=str(PTXAS),
    )
    (report,) = isa_fit(req).reports
    return report


@pytest.mark.usefixtures("no_disassembler")
@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.stem)
def test_default_install_finds_or_labels_every_recorded_finding(path: Path) -> None:
    _, dev = _recorded(path)
    got = _fit_like(dev)
    assert got.mix is None
    assert [x.split(" (")[0] for x in got.not_checked] == list(MIX_FINDINGS.values())
    assert all(
        x.endswith("fix: pip install nvidia-cuda-nvdisasm (or set KERNELPILOT_NVDISASM)")
        for x in got.not_checked
    )
    assert "nothing obvious from the ISA" not in got.text and "  not checked:" in got.text
    for finding in dev["left_on_table"]:
        label = next((lab for pre, lab in MIX_FINDINGS.items() if finding.startswith(pre)), None)
        if label is None:
            assert finding in got.left_on_table  # resources, occupancy, spills: no disassembler needed
        else:
            assert any(x.startswith(label) for x in got.not_checked)


def test_the_transpose_finding_is_labelled_not_silently_dropped(no_disassembler: None) -> None:
    """The case the issue met: the dev install's scalar 4-byte loads on transpose_smem_nopad."""
    _, dev = _recorded(RC_ISA / "fit_transpose_smem_nopad.json")
    assert dev["left_on_table"][0].startswith("scalar 4-byte global loads (4 of them)")
    got = _fit_like(dev)
    assert got.left_on_table == []
    assert "left on table: nothing obvious from the checks that ran" in got.text
    assert got.not_checked[0].startswith("vector width of global loads")


@pytest.mark.needs_tool("nvdisasm")
def test_with_the_disassembler_nothing_is_labelled_and_the_findings_match_the_record() -> None:
    _, dev = _recorded(RC_ISA / "fit_sgemm_tiled.json")
    got = _fit_like(dev)
    assert got.not_checked == [] and "not checked" not in got.text
    assert got.left_on_table == dev["left_on_table"]


def test_the_cli_prints_the_labels(no_disassembler: None, capsys: pytest.CaptureFixture[str]) -> None:
    from kernelpilot.adapters.cli import main

    argv = ["--json", "isa", "fit", str(CUBIN), "--kernel", "^l2_reread$", "--block-size", "256"]
    assert main(argv) == 0
    (rep,) = json.loads(capsys.readouterr().out)["reports"]
    assert len(rep["not_checked"]) == 2 and "pip install nvidia-cuda-nvdisasm" in rep["not_checked"][0]
    assert main(["isa", "fit", str(CUBIN), "--kernel", "^l2_reread$", "--no-disassemble"]) == 0
    text = capsys.readouterr().out
    assert "not checked (no disassembly); fix: run isa fit with --disassemble" in text


def test_bottleneck_says_which_isa_facts_it_lacked(no_disassembler: None) -> None:
    """A fit saved without a disassembler: the verdict lists the unchecked ISA facts under `missing`, with
    the fix (the narrow-load rule then reads the profile's own sectors, when it has them)."""
    from kernelpilot.bottleneck.classify import classify_bottleneck
    from kernelpilot.bottleneck.models import ClassifyRequest
    from kernelpilot.isa.api import IsaFitResult

    _, dev = _recorded(RC_ISA / "fit_transpose_smem_nopad.json")
    fit = IsaFitResult(file=str(CUBIN), reports=[_fit_like(dev)]).model_dump_json()
    raw = RC_ISA.parent / "full" / "transpose_smem_nopad_raw.csv"
    (v,) = classify_bottleneck(ClassifyRequest(profile_path=str(raw), isa_facts_json=fit)).verdicts
    note = next(m for m in v.missing if m.startswith("ISA "))
    assert "vector width of global loads" in note and "pip install nvidia-cuda-nvdisasm" in note
    with_dis = classify_bottleneck(
        ClassifyRequest(profile_path=str(raw), isa_facts_json=str(RC_ISA / "fit_transpose_smem_nopad.json"))
    )
    assert not any(m.startswith("ISA ") for m in with_dis.verdicts[0].missing)


def test_the_default_install_depends_on_the_disassembler_wheel() -> None:
    """pyproject's default dependencies (what `./install.sh` without --dev installs) carry nvdisasm's wheel
    on the platforms NVIDIA publishes it for, so the default install's findings are the dev install's."""
    import tomllib

    from packaging.requirements import Requirement

    doc = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    reqs = {Requirement(r).name: Requirement(r) for r in doc["project"]["dependencies"]}
    nvd = reqs["nvidia-cuda-nvdisasm"]
    assert nvd.marker is not None
    assert nvd.marker.evaluate({"sys_platform": "linux"}) and nvd.marker.evaluate({"sys_platform": "win32"})
    assert not nvd.marker.evaluate({"sys_platform": "darwin"})  # no wheel there: the labels cover it


@pytest.mark.needs_tool("nvdisasm")
def test_the_wheels_disassembler_is_found_without_path() -> None:
    """The wheel puts nvdisasm in site-packages, not on PATH: the toolchain finds it there."""
    from kernelpilot.host.toolchain import find_tool

    found = find_tool("nvdisasm", env={"PATH": ""})
    assert found is not None and found.name == "nvdisasm" and "site-packages" in str(found)
