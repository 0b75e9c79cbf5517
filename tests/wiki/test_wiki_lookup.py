"""Lookup: acceptance figures with citations that open to the exact line, aliases, ambiguity, UNKNOWN,
user-wiki overrides and conflicts, the env var, and the `spec` / `gpus` commands."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InputFileError, UnknownSpecError
from kernelpilot.wiki import UNKNOWN_TEXT, AmbiguousNameError, CitedValue, Wiki, WikiConflictError, load_wiki

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
SMALL = FIX / "gpu-wiki-index"


def _open_citation(wiki: Wiki, cv: CitedValue) -> str:
    files = wiki.resolve_cited_files(cv.path)
    assert files, cv.citation()
    return files[0].read_text(encoding="utf-8").splitlines()[cv.line - 1]


@pytest.mark.parametrize(
    ("gpu", "metric", "value", "unit"),
    [
        ("H100 SXM5", "bf16_dense_tflops", 989.4, "TFLOP/s"),
        ("h100-sxm5", "memory_bandwidth_tb_s", 3.35, "TB/s"),
        ("MI300X", "bf16_dense_tflops", 1307.4, "TFLOP/s"),
        ("gfx942", "memory_bandwidth_tb_s", 5.3, "TB/s"),
    ],
)
def test_acceptance_datasheet_figures_cite_the_exact_line(
    any_wiki: Wiki, gpu: str, metric: str, value: float, unit: str
) -> None:
    cv = any_wiki.lookup(gpu, metric)
    assert (cv.value, cv.unit, cv.measured) == (value, unit, False)
    line = _open_citation(any_wiki, cv)
    assert line.startswith(f"- {metric}: {cv.value_text} {unit} | source: ")
    assert cv.citation() == f"{metric}: {cv.value_text} {unit} <- {cv.path}:L{cv.line}"
    assert cv.path.startswith("gpu-wiki-index/")


def test_h100_sparse_bf16_is_separate(any_wiki: Wiki) -> None:
    assert any_wiki.lookup("H100", "bf16_sparse_tflops").number() in (1979.0, 1978.9)


def test_aliases_and_close_metric_names(small_wiki: Wiki) -> None:
    for name in ("H100", "h100 sxm", "sm_90", "NVIDIA H100 80GB HBM3", "h100-sxm5"):
        assert small_wiki.resolve_gpu(name) == "h100-sxm5"
    assert small_wiki.resolve_gpu("Instinct MI300X") == "mi300x"
    assert small_wiki.lookup("H100", "bf16 dense").metric == "bf16_dense_tflops"
    assert small_wiki.lookup("MI300X", "memory bandwidth").metric == "memory_bandwidth_tb_s"
    assert small_wiki.lookup("MI300X", "hbm bandwidth").metric == "memory_bandwidth_tb_s"


def test_ambiguous_names_list_candidates(small_wiki: Wiki) -> None:
    with pytest.raises(AmbiguousNameError) as exc:
        small_wiki.lookup("H100", "bf16")
    assert exc.value.candidates == ["bf16_dense_tflops", "bf16_sparse_tflops"]
    with pytest.raises(AmbiguousNameError) as gexc:
        small_wiki.resolve_gpu("h1")
    assert set(gexc.value.candidates) == {"h100-pcie", "h100-sxm5"}


def test_unknown_gpu_and_metric_are_explicit(small_wiki: Wiki) -> None:
    with pytest.raises(UnknownSpecError) as exc:
        small_wiki.lookup("B200", "bf16_dense_tflops")
    assert exc.value.message.startswith(UNKNOWN_TEXT)
    with pytest.raises(UnknownSpecError) as mexc:
        small_wiki.lookup("H100 PCIe", "bf16_dense_tflops")
    assert UNKNOWN_TEXT in mexc.value.message and "bf16_dense_tflops" in mexc.value.message


def _user_wiki(tmp_path: Path, name: str, lines: str, stem: str = "h100-sxm5") -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / f"{stem}.md").write_text(f"# user notes\n\n{lines}\n")
    return d


def test_override_of_bundled_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import kernelpilot.foundation.paths as paths

    monkeypatch.setattr(paths, "bundled_dir", lambda name: SMALL)
    u = _user_wiki(
        tmp_path, "labwiki", "- memory_bandwidth_tb_s: 3.2 TB/s | source: lab sheet, row 1, https://lab"
    )
    wiki = load_wiki([u])
    cv = wiki.lookup("H100", "memory_bandwidth_tb_s")
    assert cv.citation() == "memory_bandwidth_tb_s: 3.2 TB/s <- labwiki/h100-sxm5.md:L3"
    overrides = [i for i in wiki.issues if i.kind == "override"]
    assert len(overrides) == 1 and "gpu-wiki-index/nvidia/h100-sxm5.md:L14" in overrides[0].message
    assert wiki.override_notes("h100-sxm5")[0].startswith("memory_bandwidth_tb_s: 3.2 TB/s <- labwiki")
    # untouched metrics still come from the bundled file
    assert wiki.lookup("H100", "bf16_dense_tflops").path == "gpu-wiki-index/nvidia/h100-sxm5.md"


def test_conflicting_user_wikis_are_reported_and_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import kernelpilot.foundation.paths as paths

    monkeypatch.setattr(paths, "bundled_dir", lambda name: SMALL)
    a = _user_wiki(tmp_path, "wa", "- tdp_w: 650 W | source: lab A, row 2, https://a")
    b = _user_wiki(tmp_path, "wb", "- tdp_w: 600 W | source: lab B, row 7, https://b")
    wiki = load_wiki([a, b])
    conflicts = [i for i in wiki.issues if i.kind == "conflict"]
    assert len(conflicts) == 1 and conflicts[0].location() == "wb/h100-sxm5.md:L3"
    with pytest.raises(WikiConflictError) as exc:
        wiki.lookup("H100", "tdp_w")
    assert exc.value.candidates == [
        "tdp_w: 650 W <- wa/h100-sxm5.md:L3",
        "tdp_w: 600 W <- wb/h100-sxm5.md:L3",
    ]


def test_env_var_adds_user_wikis_and_new_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    u = _user_wiki(
        tmp_path, "mine", "- memory_bandwidth_tb_s: 1.5 TB/s | source: my doc, t1, https://m", "acme-x1"
    )
    monkeypatch.setenv("KERNELPILOT_WIKI_PATH", f"{SMALL}{__import__('os').pathsep}{u}")
    wiki = load_wiki(include_bundled=False)
    assert [r.name for r in wiki.roots] == ["gpu-wiki-index", "mine"]
    assert wiki.lookup("acme-x1", "memory_bandwidth_tb_s").citation() == (
        "memory_bandwidth_tb_s: 1.5 TB/s <- mine/acme-x1.md:L3"
    )


def test_missing_wiki_dir_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(InputFileError):
        load_wiki([tmp_path / "nope"], include_bundled=False)


def test_measured_lines_attach_by_gpu_id_marker(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    shutil.copy(FIX / "measured-h100.md", d / "ceilings-2026.md")  # stem is no GPU name: title marker decides
    wiki = load_wiki([SMALL, d], include_bundled=False)
    cv = wiki.lookup("H100", "measured_copy_bandwidth_tb_s")
    assert cv.measured and cv.unit == "TB/s" and cv.path == "m/ceilings-2026.md"
    assert "device=NVIDIA H100 80GB HBM3" in cv.source_text and "runs=50" in cv.source_text


def test_cli_spec_and_gpus(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    u = _user_wiki(
        tmp_path, "mine", "- memory_bandwidth_tb_s: 1.5 TB/s | source: my doc, t1, https://m", "acme-x1"
    )
    r = run_cli("spec", "acme-x1", "memory_bandwidth_tb_s", "--wiki", str(u))
    assert r.code == 0 and r.out.strip() == "memory_bandwidth_tb_s: 1.5 TB/s <- mine/acme-x1.md:L3"
    r = run_cli("spec", "acme-x1", "fp4_dense_tflops", "--wiki", str(u))
    assert r.code == 1 and r.out == "" and r.err.startswith(f"kernelpilot: error: {UNKNOWN_TEXT}")
    assert "\n  fix: known metrics: memory_bandwidth_tb_s" in r.err  # errors: stderr, a fix line (issue 42)
    r = run_cli("spec", "acme-x1", "--wiki", str(u))
    assert r.code == 0 and "mine/acme-x1.md:L3" in r.out
    r = run_cli("--json", "spec", "no-such-gpu-zz", "--wiki", str(u))
    assert r.code == 1 and '"status": "unknown"' in r.out
    r = run_cli("gpus", "--wiki", str(u))
    assert r.code == 0 and "acme-x1" in r.out


def test_absent_vocabulary_key_is_unknown_not_fuzzy(small_wiki: Wiki) -> None:
    # h100-pcie (fixture) has bf16_sparse_tflops but no bf16_dense_tflops: the exact key must not drift
    with pytest.raises(UnknownSpecError):
        small_wiki.lookup("H100 PCIe", "bf16_dense_tflops")
    assert small_wiki.lookup("H100 PCIe", "bf16").metric == "bf16_sparse_tflops"


def test_cli_spec_takes_an_unquoted_two_word_gpu_name(run_cli) -> None:  # type: ignore[no-untyped-def]
    """`kernelpilot spec H100 SXM` lists the H100 SXM's specs; it does not look up a metric named SXM."""
    joined = run_cli("--json", "spec", "H100", "SXM", "--wiki", str(SMALL))
    quoted = run_cli("--json", "spec", "H100 SXM", "--wiki", str(SMALL))
    assert joined.code == quoted.code == 0, joined.out + joined.err
    assert '"status": "found"' in joined.out and '"metric": null' in joined.out
    assert joined.out.replace('"gpu": "H100 SXM"', "") == quoted.out.replace('"gpu": "H100 SXM"', "")
    # a second word that names no GPU is still the metric (exact key and close names)
    r = run_cli("spec", "H100", "memory_bandwidth_tb_s", "--wiki", str(SMALL))
    assert r.code == 0 and r.out.startswith("memory_bandwidth_tb_s: 3.35 TB/s <- ")
    r = run_cli("spec", "H100", "SXM9", "--wiki", str(SMALL))  # neither a GPU nor a metric: UNKNOWN metric
    assert r.code == 1 and "metric 'SXM9'" in r.err
