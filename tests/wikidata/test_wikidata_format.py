"""Format checker for the bundled gpu-wiki-index (line grammar: `kernelpilot.wiki.core` docstring).

Self-contained on purpose: plain regexes over the Markdown, no import of kernelpilot's own wiki parser, so the
data is checked independently of the code that reads it.

Every `- <key>: <value> <unit> | source: ...` line must carry a source (or `measured:` provenance), parse,
use a unit from the vocabulary and the unit the vocabulary gives its key, and appear once per GPU file.
The index must point at existing files, index every GPU file, and give no alias to two GPUs.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernelpilot.wiki.models import UNITS

WIKI = Path(__file__).resolve().parents[2] / "gpu-wiki-index"

# Units a wiki line may carry; the README vocabulary may use only these. One list, the reader's own (a copy
# here went stale when the issue-rate lines brought inst/clk and results/clk).
ALLOWED_UNITS = set(UNITS)

# A line that *claims* to be a spec: list item starting with `key:`.
SPEC_CANDIDATE = re.compile(r"^\s*-\s+[A-Za-z][A-Za-z0-9_]*\s*:")
SPEC_LINE = re.compile(
    r"^- (?P<key>[a-z][a-z0-9_]*): (?P<value>\"[^\"|]*\"|-?\d+(?:\.\d+)?) (?P<unit>\S+)"
    r" \| (?P<kind>source|measured): (?P<prov>\S.*)$"
)
URL = re.compile(r"https?://\S+")
MEASURED_FIELDS = ("device=", "driver=", "date=", "method=", "command=", "runs=", "median=")
TABLE_ROW = re.compile(r"^\|(.+)\|\s*$")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    # relative file -> metric key -> (value, unit, line number)
    specs: dict[str, dict[str, tuple[str, str, int]]] = field(default_factory=dict)

    def add(self, where: str, msg: str) -> None:
        self.problems.append(f"{where}: {msg}")


def _table_rows(lines: list[str], header: list[str]) -> list[list[str]]:
    """Rows of the first Markdown table whose header cells equal `header`."""
    rows: list[list[str]] = []
    in_table = False
    for line in lines:
        m = TABLE_ROW.match(line.strip())
        if not m:
            if in_table:
                break
            continue
        cells = [c.strip() for c in m.group(1).split("|")]
        if not in_table:
            if [c.lower() for c in cells] == header:
                in_table = True
            continue
        if all(set(c) <= set("-: ") for c in cells):
            continue  # separator row
        rows.append(cells)
    return rows


def load_vocabulary(wiki: Path, report: Report) -> dict[str, str]:
    lines = (wiki / "README.md").read_text(encoding="utf-8").splitlines()
    vocab: dict[str, str] = {}
    rows = _table_rows(lines, ["key", "unit", "meaning"])
    if not rows:
        report.add("README.md", "no metric vocabulary table `| key | unit | meaning |`")
    for cells in rows:
        if len(cells) != 3:
            report.add("README.md", f"vocabulary row with {len(cells)} cells: {cells}")
            continue
        key, unit, _ = cells
        if unit not in ALLOWED_UNITS:
            report.add("README.md", f"vocabulary key {key!r} uses unit {unit!r} outside the unit vocabulary")
        if key in vocab:
            report.add("README.md", f"vocabulary key {key!r} defined twice")
        vocab[key] = unit
    return vocab


def load_index(wiki: Path, report: Report) -> dict[str, str]:
    """gpu_id -> relative file; also checks files exist and aliases are unique."""
    lines = (wiki / "README.md").read_text(encoding="utf-8").splitlines()
    rows = _table_rows(lines, ["gpu_id", "file", "vendor", "aliases"])
    if not rows:
        report.add("README.md", "no index table `| gpu_id | file | vendor | aliases |`")
    index: dict[str, str] = {}
    owner: dict[str, str] = {}  # lower-cased name -> gpu_id that owns it
    for cells in rows:
        if len(cells) != 4:
            report.add("README.md", f"index row with {len(cells)} cells: {cells}")
            continue
        gpu_id, rel, vendor, aliases = cells
        if gpu_id in index:
            report.add("README.md", f"gpu_id {gpu_id!r} indexed twice")
        index[gpu_id] = rel
        if not vendor:
            report.add("README.md", f"gpu_id {gpu_id!r} has no vendor")
        if not (wiki / rel).is_file():
            report.add("README.md", f"gpu_id {gpu_id!r} points to missing file {rel!r}")
        names = [gpu_id] + [a.strip() for a in aliases.split(",") if a.strip()]
        for name in dict.fromkeys(n.lower() for n in names):
            if name in owner and owner[name] != gpu_id:
                report.add("README.md", f"alias {name!r} appears on rows {owner[name]!r} and {gpu_id!r}")
            owner.setdefault(name, gpu_id)
    return index


def check_gpu_file(path: Path, rel: str, vocab: dict[str, str], report: Report) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].startswith("# "):
        report.add(rel, "file must start with `# <GPU full name>`")
    seen: dict[str, tuple[str, str, int]] = {}
    for no, line in enumerate(lines, start=1):
        if not SPEC_CANDIDATE.match(line):
            continue
        where = f"{rel}:{no}"
        m = SPEC_LINE.match(line)
        if not m:
            report.add(where, f"malformed spec line (need `- key: value unit | source: ...`): {line!r}")
            continue
        key, value, unit, kind, prov = m.group("key", "value", "unit", "kind", "prov")
        if key not in vocab:
            report.add(where, f"metric {key!r} is not in the README vocabulary")
        elif vocab[key] != unit:
            report.add(where, f"metric {key!r} has unit {unit!r}, vocabulary says {vocab[key]!r}")
        if unit not in ALLOWED_UNITS:
            report.add(where, f"unit {unit!r} outside the unit vocabulary")
        if (unit == "text") != value.startswith('"'):
            report.add(where, "text values must be double-quoted with unit `text`; numbers must not be")
        if kind == "source":
            if not URL.search(prov):
                report.add(where, "source names no URL")
            if prov.count(",") < 2:
                report.add(where, "source must name document title, table/page and URL")
        else:
            missing = [f for f in MEASURED_FIELDS if f not in prov]
            if missing:
                report.add(where, f"measured provenance lacks {', '.join(missing)}")
        if key in seen:
            report.add(where, f"metric {key!r} defined twice (first at line {seen[key][2]})")
        else:
            seen[key] = (value, unit, no)
    report.specs[rel] = seen


def check_wiki(wiki: Path) -> Report:
    report = Report()
    vocab = load_vocabulary(wiki, report)
    index = load_index(wiki, report)
    indexed = set(index.values())
    gpu_files = sorted(p for p in wiki.rglob("*.md") if p.name != "README.md")
    if not gpu_files:
        report.add(str(wiki), "no GPU files")
    for path in gpu_files:
        rel = path.relative_to(wiki).as_posix()
        if rel not in indexed:
            report.add(rel, "GPU file is not in the README index")
        check_gpu_file(path, rel, vocab, report)
    return report


# ----------------------------------------------------------------------------------------------- tests


def test_bundled_wiki_is_well_formed() -> None:
    report = check_wiki(WIKI)
    assert report.problems == []
    assert sum(len(v) for v in report.specs.values()) > 100


# GPUs for which no sourced figure was reachable: their files explain why and hold no spec line,
# so every lookup on them is UNKNOWN. Anything else must carry a real set of specs.
NO_VENDOR_SOURCE: set[str] = set()
# GPUs whose product figures come from press/catalogue reports only (no vendor document reachable): each such
# line says so (per-SM lines still come from CCCL through the compute capability).
REPORTED_ONLY = {"nvidia/h20.md"}


def test_every_indexed_gpu_has_specs() -> None:
    report = check_wiki(WIKI)
    for rel in REPORTED_ONLY:
        text = (WIKI / rel).read_text(encoding="utf-8")
        product = re.compile(r"^- (memory_\w+|tdp_w|arch_name|\w+_tflops|\w+_tops): ")
        sourced = [ln for ln in text.splitlines() if product.match(ln)]
        assert sourced and all("reported" in ln for ln in sourced), rel
    for rel, specs in report.specs.items():
        if rel in NO_VENDOR_SOURCE:
            assert specs == {}, f"{rel} gained specs: drop it from NO_VENDOR_SOURCE"
            assert "UNKNOWN" in (WIKI / rel).read_text(encoding="utf-8")
        else:
            assert len(specs) >= 5, f"{rel} has only {len(specs)} specs"


@pytest.mark.parametrize(
    ("rel", "metric", "unit"),
    [
        ("nvidia/h100-sxm5.md", "bf16_dense_tflops", "TFLOP/s"),
        ("nvidia/h100-sxm5.md", "memory_bandwidth_tb_s", "TB/s"),
        ("amd/mi300x.md", "bf16_dense_tflops", "TFLOP/s"),
        ("amd/mi300x.md", "memory_bandwidth_tb_s", "TB/s"),
    ],
)
def test_key_figures_present(rel: str, metric: str, unit: str) -> None:
    specs = check_wiki(WIKI).specs[rel]
    assert metric in specs
    value, got_unit, _ = specs[metric]
    assert got_unit == unit
    assert float(value) > 0


def test_key_figure_values() -> None:
    specs = check_wiki(WIKI).specs
    assert specs["nvidia/h100-sxm5.md"]["bf16_dense_tflops"][0] == "989.4"
    assert specs["nvidia/h100-sxm5.md"]["memory_bandwidth_tb_s"][0] == "3.35"
    assert specs["amd/mi300x.md"]["bf16_dense_tflops"][0] == "1307.4"
    assert specs["amd/mi300x.md"]["memory_bandwidth_tb_s"][0] == "5.3"


def test_aliases_required_by_issue() -> None:
    lines = (WIKI / "README.md").read_text(encoding="utf-8").splitlines()
    rows = _table_rows(lines, ["gpu_id", "file", "vendor", "aliases"])
    aliases = {r[0]: {a.strip() for a in r[3].split(",")} for r in rows}
    assert {"H100", "sm_90"} <= aliases["h100-sxm5"]
    assert "H100 PCIe" in aliases["h100-pcie"]
    assert {"MI300X", "gfx942"} <= aliases["mi300x"]
    assert "gfx950" in aliases["mi355x"]
    assert "gfx90a" in aliases["mi250x"]
    assert "gfx1030" in aliases["rx-6900-xt"]
    assert "gfx1100" in aliases["rx-7900-xtx"]
    assert "gfx1201" in aliases["rx-9070-xt"]


# ------------------------------------------------------------------------------------- negative tests


@pytest.fixture
def wiki_copy(tmp_path: Path) -> Path:
    dst = tmp_path / "gpu-wiki-index"
    shutil.copytree(WIKI, dst)
    return dst


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as fh:
        fh.write(text + "\n")


@pytest.mark.parametrize(
    ("bad_line", "expect"),
    [
        ("- l2_cache_mb: 50 MB", "malformed spec line"),
        ("- l2_cache_mb: 50 MB | source:", "malformed spec line"),
        ("- boost_clock_mhz: 1980 GHz | source: Doc, table 1, https://example.com/x", "unit 'GHz'"),
        ("- boost_clock_mhz: 1980 MB | source: Doc, table 1, https://example.com/x", "vocabulary says 'MHz'"),
        ("- warp_speed: 9 count | source: Doc, table 1, https://example.com/x", "not in the README"),
        ("- bf16_dense_tflops: 1.0 TFLOP/s | source: Doc, table 1, https://example.com/x", "defined twice"),
        ("- memory_type: HBM3 text | source: Doc, table 1, https://example.com/x", "malformed spec line"),
        ('- l2_cache_mb: "50" MB | source: Doc, table 1, https://example.com/x', "must be double-quoted"),
        ("- l2_cache_mb: about 50 MB | source: Doc, table 1, https://example.com/x", "malformed spec line"),
        ("- l2_cache_mb: 50 MB | source: Doc, table 1, no address", "source names no URL"),
        ("- measured_copy_bandwidth_tb_s: 3.0 TB/s | measured: device=H100, runs=5", "lacks driver="),
    ],
)
def test_checker_rejects_crafted_bad_line(wiki_copy: Path, bad_line: str, expect: str) -> None:
    target = wiki_copy / "nvidia" / "h100-sxm5.md"
    _append(target, bad_line)
    problems = check_wiki(wiki_copy).problems
    assert problems, "checker accepted a bad line"
    assert any("nvidia/h100-sxm5.md:" in p and expect in p for p in problems), problems


def test_checker_accepts_good_measured_line(wiki_copy: Path) -> None:
    _append(
        wiki_copy / "nvidia" / "a100-sxm-80gb.md",
        "- measured_copy_bandwidth_tb_s: 3.01 TB/s | measured: device=NVIDIA H100 80GB HBM3, driver=580.1, "
        'date=2026-11-22, method=torch copy_ d2d 2 GiB, command="kernelpilot ceilings measure", runs=50, '
        "median=3.01, spread=0.4%",
    )
    assert check_wiki(wiki_copy).problems == []


def test_checker_rejects_unindexed_file(wiki_copy: Path) -> None:
    (wiki_copy / "nvidia" / "ghost.md").write_text("# Ghost GPU\n", encoding="utf-8")
    problems = check_wiki(wiki_copy).problems
    assert any("nvidia/ghost.md: GPU file is not in the README index" in p for p in problems), problems


def test_checker_rejects_missing_file_and_shared_alias(wiki_copy: Path) -> None:
    readme = wiki_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    text = text.replace(
        "| h20 | nvidia/h20.md | NVIDIA | H20, NVIDIA H20 |",
        "| h20 | nvidia/h20.md | NVIDIA | H20, NVIDIA H20 |\n| h800 | nvidia/h800.md | NVIDIA | H800, h100 |",
    )
    readme.write_text(text, encoding="utf-8")
    problems = check_wiki(wiki_copy).problems
    assert any("points to missing file 'nvidia/h800.md'" in p for p in problems), problems
    assert any("alias 'h100' appears on rows 'h100-sxm5' and 'h800'" in p for p in problems), problems


def test_checker_rejects_vocabulary_unit_outside_contract(wiki_copy: Path) -> None:
    readme = wiki_copy / "README.md"
    text = readme.read_text(encoding="utf-8")
    text = text.replace("| boost_clock_mhz | MHz |", "| boost_clock_mhz | GHz |")
    readme.write_text(text, encoding="utf-8")
    problems = check_wiki(wiki_copy).problems
    assert any("'boost_clock_mhz' uses unit 'GHz'" in p for p in problems), problems
