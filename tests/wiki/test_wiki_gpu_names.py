"""GPU names that could mean several parts say so (issue 42), and `spec` errors follow `roofline`'s
convention (stderr, a fix line, the same exit code), on the bundled gpu-wiki.

`H100` is an alias of the SXM5 file although the wiki holds the PCIe and NVL parts too; `gfx942` is owned by
the MI300X file although the MI300A, MI308X and MI325X are gfx942; `sm_89` is nobody's alias although seven
wiki GPUs are sm_89 (gpu-wiki-index/README.md, "Architecture ids are aliases only where one file owns them").
"""

from __future__ import annotations

import json

import pytest

from kernelpilot.wiki.api import spec_lookup
from kernelpilot.wiki.core import Wiki, load_wiki
from kernelpilot.wiki.errors import AmbiguousNameError
from kernelpilot.wiki.models import SpecRequest

SM_89 = ["l4", "l40", "l40s", "rtx-4070", "rtx-4080", "rtx-4090", "rtx-6000-ada"]


@pytest.fixture(scope="module")
def wiki() -> Wiki:
    return load_wiki([])


def test_a_family_name_says_which_part_it_picked(wiki: Wiki) -> None:
    assert wiki.resolve_gpu("H100") == "h100-sxm5"
    note = wiki.name_note("H100", "h100-sxm5")
    assert note is not None and note.startswith("'H100' picked h100-sxm5 (NVIDIA H100 SXM5 80GB)")
    assert "h100-nvl (NVIDIA H100 NVL)" in note and "h100-pcie (NVIDIA H100 PCIe 80GB)" in note


@pytest.mark.parametrize("name", ["H100 SXM5", "h100-pcie", "L40", "MI250", "A10", "RTX 4090", "MI300X"])
def test_a_parts_own_name_has_no_note(wiki: Wiki, name: str) -> None:
    """A part's id or title is no family name, even when another part's name starts with it (L40/L40S)."""
    assert wiki.name_note(name, wiki.resolve_gpu(name)) is None


def test_an_architecture_alias_names_the_other_gpus_of_that_architecture(wiki: Wiki) -> None:
    assert wiki.resolve_gpu("gfx942") == "mi300x"
    note = wiki.name_note("gfx942", "mi300x")
    assert note is not None and "'gfx942' is an architecture: picked mi300x" in note
    assert "mi300a, mi308x, mi325x are gfx942 too" in note


def test_an_architecture_nobody_owns_lists_its_gpus(wiki: Wiki) -> None:
    assert wiki.arch_gpus("sm_89") == SM_89
    with pytest.raises(AmbiguousNameError) as info:
        wiki.resolve_gpu("sm_89")
    assert info.value.candidates == SM_89
    assert "7 wiki GPUs are sm_89" in info.value.message
    res = spec_lookup(SpecRequest(gpu="sm_89", metric="memory_bandwidth_tb_s"))
    assert res.status == "ambiguous" and res.candidates == SM_89
    error = res.cli_error()  # what the CLI prints: the resolver's own fix
    assert error is not None and error.hint == "give the GPU's name or wiki id (one of the candidates)"


def test_spec_result_carries_the_note_over_the_core_call() -> None:
    res = spec_lookup(SpecRequest(gpu="H100", metric="memory_bandwidth_tb_s"))
    assert res.status == "found" and res.gpu_id == "h100-sxm5"
    assert len(res.notes) == 1 and "h100-pcie" in res.notes[0]
    assert spec_lookup(SpecRequest(gpu="h100-sxm5", metric="memory_bandwidth_tb_s")).notes == []


def test_cli_spec_prints_the_note_and_errors_like_roofline(run_cli) -> None:  # type: ignore[no-untyped-def]
    r = run_cli("spec", "H100", "memory_bandwidth_tb_s")
    assert r.code == 0 and r.out.splitlines()[1].startswith("note: 'H100' picked h100-sxm5")
    spec = run_cli("spec", "sm_89", "memory_bandwidth_tb_s")
    roof = run_cli("roofline", "sm_89", "--op", "softmax", "--rows", "2", "--cols", "2", "--dtype", "bf16")
    assert spec.out == roof.out == ""
    assert spec.code == roof.code == 2  # AmbiguousNameError's code, as roofline raises it
    assert spec.err.splitlines()[0] == roof.err.splitlines()[0]
    assert spec.err.splitlines()[1] == "  fix: give the GPU's name or wiki id (one of the candidates)"
    spec = run_cli("spec", "no-such-gpu-zz", "memory_bandwidth_tb_s")
    roof = run_cli(
        "roofline", "no-such-gpu-zz", "--op", "softmax", "--rows", "2", "--cols", "2", "--dtype", "bf16"
    )
    assert spec.code == roof.code == 1 and spec.out == roof.out == ""
    assert spec.err == roof.err and spec.err.splitlines()[1].startswith(
        "  fix: list GPUs with `kernelpilot gpus`"
    )
    js = run_cli("--json", "spec", "sm_89", "memory_bandwidth_tb_s")  # --json: the result, same exit code
    assert js.code == 2 and json.loads(js.out)["candidates"] == SM_89


def test_roofline_says_which_part_a_family_name_picked() -> None:
    from kernelpilot.roofline.core import analyze
    from kernelpilot.roofline.models import RooflineRequest

    res = analyze(RooflineRequest(gpu="H100", op="softmax", rows=32768, cols=4096, dtype="bf16"))
    assert res.gpu_id == "h100-sxm5" and res.notes[0].startswith("'H100' picked h100-sxm5")
    res = analyze(RooflineRequest(gpu="h100-pcie", op="softmax", rows=32768, cols=4096, dtype="bf16"))
    assert not any("picked" in n for n in res.notes)


def test_workspace_init_says_which_part_its_platform_picked(run_cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    kernel = Path(__file__).resolve().parents[1] / "fixtures" / "workspace" / "vector_add.cu"
    common = ["--kernel", str(kernel), "--framework", "cuda", "--dtype", "bf16", "--allow-tbd"]
    r = run_cli("workspace", "init", "a", "--platform", "H100", *common, "--root", str(tmp_path))
    assert r.code == 0 and "  note:     'H100' picked h100-sxm5" in r.out and "h100-pcie" in r.out
    r = run_cli(
        "--json", "workspace", "init", "b", "--platform", "h100-pcie", *common, "--root", str(tmp_path)
    )
    assert r.code == 0 and json.loads(r.out)["gpu_note"] == ""
