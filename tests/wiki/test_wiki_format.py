"""Wiki line grammar, malformed/duplicate handling, and a walk of every wiki we ship or test with."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.wiki import UNITS, load_wiki, parse_spec_line
from kernelpilot.wiki.core import parse_gpu_file

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"
SMALL = FIX / "gpu-wiki-index"
WIKIDATA_COPY = FIX / "wikidata-copy" / "gpu-wiki-index"


def test_parse_numeric_text_and_measured_lines() -> None:
    p = parse_spec_line("- bf16_dense_tflops: 989.4 TFLOP/s | source: Datasheet, table 1, https://x")
    assert not isinstance(p, str) and p is not None
    assert (p.key, p.value, p.unit, p.measured) == ("bf16_dense_tflops", 989.4, "TFLOP/s", False)
    t = parse_spec_line('- memory_type: "HBM3" text | source: Datasheet, p. 2, https://x')
    assert not isinstance(t, str) and t is not None and t.value == "HBM3"
    m = parse_spec_line("- measured_copy_bandwidth_tb_s: 3.005 TB/s | measured: device=H100, runs=50")
    assert not isinstance(m, str) and m is not None and m.measured and m.value == 3.005
    assert parse_spec_line("Some prose line") is None
    assert parse_spec_line("## Heading") is None
    assert parse_spec_line("- Note: prose bullet with a capital") is None


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("- bf16_dense_tflops: 989.4 TFLOPS | source: a, b, https://x", "unit"),
        ("- bf16_dense_tflops: 989.4 TFLOP/s", "provenance"),
        ("- bf16_dense_tflops: about 989 TFLOP/s | source: a, b, https://x", "value"),
        ("- memory_type: HBM3 text | source: a, b, https://x", "value"),
        ('- memory_type: "HBM3" GB | source: a, b, https://x', "text"),
        ("- sm_count: 132 text | source: a, b, https://x", "quoted"),
    ],
)
def test_malformed_lines_say_why(line: str, why: str) -> None:
    out = parse_spec_line(line)
    assert isinstance(out, str) and why in out


def test_malformed_and_duplicate_lines_reported_with_location_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "w"
    (root / "x").mkdir(parents=True)
    (root / "README.md").write_text(
        "| gpu_id | file | vendor | aliases |\n| --- | --- | --- | --- |\n| g1 | x/g1.md | ACME | G1 |\n\n"
        "| key | unit | meaning |\n| --- | --- | --- |\n| memory_bandwidth_tb_s | TB/s | bw |\n"
    )
    (root / "x" / "g1.md").write_text(
        "# ACME G1\n"
        "- memory_bandwidth_tb_s: 2 TB/s | source: doc, t1, https://a\n"
        "- memory_bandwidth_tb_s: 3 TB/s | source: doc, t2, https://a\n"
        "- fp32_vector_tflops: 10 TFLOPS | source: doc, t1, https://a\n"
        "- l2_cache_mb: 40 MB\n"
    )
    wiki = load_wiki([root], include_bundled=False)
    kinds = {(i.kind, i.location()) for i in wiki.issues}
    assert ("duplicate", "w/x/g1.md:L3") in kinds
    assert ("malformed", "w/x/g1.md:L4") in kinds
    assert ("malformed", "w/x/g1.md:L5") in kinds
    assert wiki.lookup("g1", "memory_bandwidth_tb_s").value == 2.0  # first definition kept
    assert [c.metric for c in wiki.specs("g1")] == ["memory_bandwidth_tb_s"]  # malformed never used


def test_vocabulary_unit_mismatch_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "README.md").write_text(
        "| gpu_id | file | vendor | aliases |\n|---|---|---|---|\n| g1 | g1.md | ACME | |\n\n"
        "| key | unit | meaning |\n|---|---|---|\n| memory_bandwidth_tb_s | TB/s | bw |\n"
    )
    (root / "g1.md").write_text("# G1\n- memory_bandwidth_tb_s: 2000 GB/s | source: doc, t, https://a\n")
    wiki = load_wiki([root], include_bundled=False)
    assert any(i.kind == "malformed" and "vocabulary unit" in i.message for i in wiki.issues)
    assert wiki.get("g1", "memory_bandwidth_tb_s") is None


def _wiki_roots() -> list[Path]:
    roots = [SMALL, WIKIDATA_COPY]
    bundled = bundled_dir("gpu-wiki-index")
    if any(bundled.rglob("*.md")):
        roots.append(bundled)
    return roots


@pytest.mark.parametrize("root", _wiki_roots(), ids=lambda p: str(p.relative_to(p.parents[2])))
def test_every_value_line_has_source_unit_and_no_duplicates(root: Path) -> None:
    """Acceptance: walk the whole wiki; fail on a line without source, a unit outside the vocabulary,
    or a duplicate metric per GPU."""
    problems: list[str] = []
    for f in sorted(root.rglob("*.md")):
        if f.name == "README.md":
            continue
        seen: dict[str, int] = {}
        for no, line in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1):
            parsed = parse_spec_line(line)
            if parsed is None:
                continue
            where = f"{f.relative_to(root)}:L{no}"
            if isinstance(parsed, str):
                problems.append(f"{where}: {parsed}")
                continue
            assert parsed.unit in UNITS
            if len(parsed.source) < 10:
                problems.append(f"{where}: provenance too short")
            if not parsed.measured and "http" not in parsed.source:
                problems.append(f"{where}: source names no address")
            if parsed.key in seen:
                problems.append(f"{where}: duplicate of L{seen[parsed.key]}")
            seen[parsed.key] = no
        issues: list = []
        parse_gpu_file(f, f.name, "x", issues)
        problems.extend(i.render() for i in issues)
    assert problems == []


def test_measured_lines_only_in_measured_section_and_with_measured_keys(tmp_path: Path) -> None:
    root = tmp_path / "w"
    root.mkdir()
    (root / "README.md").write_text(
        "| gpu_id | file | vendor | aliases |\n|---|---|---|---|\n| g1 | g1.md | ACME | |\n\n"
        "| key | unit | meaning |\n|---|---|---|\n| tdp_w | W | power |\n"
        "| measured_copy_bandwidth_tb_s | TB/s | copy |\n"
    )
    (root / "g1.md").write_text(
        "# G1\n"
        "- measured_copy_bandwidth_tb_s: 1 TB/s | measured: device=G1, runs=5\n"  # L2 outside section
        "- tdp_w: 300 W | measured: device=G1, runs=5\n"  # L3 measured tag on datasheet key
        "- fp99_tflops: 1 TFLOP/s | source: doc, t, https://a\n"  # L4 not in vocabulary (kept, reported)
        "## Measured\n"
        "- tdp_w: 300 W | source: doc, t, https://a\n"  # L6 datasheet line inside Measured
        "- measured_copy_bandwidth_tb_s: 1.5 TB/s | source: doc, t, https://a\n"  # L7 source tag
        "- measured_copy_bandwidth_tb_s: 1.2 TB/s | measured: device=G1, runs=5, median=1.2\n"  # L8 ok
    )
    wiki = load_wiki([root], include_bundled=False)
    by_line = {i.line: i.kind for i in wiki.issues}
    assert by_line == {2: "malformed", 3: "malformed", 4: "unknown_metric", 6: "malformed", 7: "malformed"}
    cv = wiki.lookup("g1", "measured_copy_bandwidth_tb_s")
    assert cv.line == 8 and cv.measured and cv.value == 1.2
    assert wiki.get("g1", "tdp_w") is None
    assert wiki.lookup("g1", "fp99_tflops").value == 1.0
