"""Lever -> playbook sections (kernelpilot.suggest.playbook): every section named exists in its playbook,
and the kernel's shape picks them (a loop-free kernel never gets `num_stages` / async-copy pipelining)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelpilot.suggest.playbook import SECTIONS, kernel_shape, sections
from kernelpilot.suggest.rules import LEVERS

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"


def _headings(book: str) -> set[str]:
    text = (PLAYBOOKS / book).read_text()
    return set(re.findall(r"^### ([A-Z]\d+)\. ", text, re.M))


def test_every_section_exists_and_every_lever_id_is_real() -> None:
    ids = {lv.id for lv in LEVERS}
    for lever, rows in SECTIONS.items():
        assert lever in ids, lever
        for book, sid, _title, _shape in rows:
            assert sid in _headings(book), (lever, book, sid)


def test_loop_free_kernels_never_get_loop_pipelining() -> None:
    free = sections("increase_ilp", "loop_free")
    assert "playbooks/triton.md M1. Block size (more elements per program)" in free
    assert not [s for s in free if "num_stages" in s or "cuda.md L3" in s]
    loop = sections("increase_ilp", "loop")
    assert "playbooks/triton.md L1. `num_stages` (software pipelining)" in loop
    assert not [s for s in loop if "triton.md M1" in s]
    unknown = sections("increase_ilp", None)
    assert "playbooks/triton.md L1. `num_stages` (software pipelining) (kernels with a loop only)" in unknown
    assert sections("measure_first", None) == []


@pytest.mark.parametrize(("loads", "shape"), [(2.0, "loop_free"), (8.0, "loop_free"), (248.0, "loop")])
def test_shape_from_loads_per_thread(loads: float, shape: str) -> None:
    v = {"causes": [{"evidence": [{"metric": "global_loads_per_thread", "value": loads}]}]}
    assert kernel_shape(v)[0] == shape
    assert kernel_shape({"causes": []}) == (None, "")


def _sections(book: str, prefix: str) -> dict[str, str]:
    text = (PLAYBOOKS / book).read_text()
    parts = re.split(r"^### ", text, flags=re.M)[1:]
    return {p.split(".", 1)[0]: p for p in parts if p.startswith(prefix)}


@pytest.mark.parametrize("book", ["triton.md", "cuda.md", "hip.md"])
def test_reduction_and_selection_levers_say_when_how_to_verify_and_cite(book: str) -> None:
    """The R sections (issue 32: levers for issue-bound reductions and selection) follow the playbook
    format and cite a public source by URL; the counters they name are ones kernelpilot reads."""
    found = _sections(book, "R")
    assert found, book
    for sid, body in found.items():
        for field in ("**When**", "**How**", "**Verify**", "**Risks**", "**Source**"):
            assert field in body, (book, sid, field)
        assert "https://" in body.split("**Source**", 1)[1], (book, sid)


def test_triton_and_cuda_cover_every_issue_lever_topic() -> None:
    topics = {
        "denominator": "R2",
        "integer key": "R3",
        "knock-out": "R4",
        "itonic": "R5",
        "-per-row": "R6",
    }
    for book in ("triton.md", "cuda.md"):
        found = _sections(book, "R")
        for word, sid in topics.items():
            assert word in found[sid].split("\n", 1)[0], (book, sid, word)
    assert "Replicated epilogues" in _sections("triton.md", "R")["R7"]
    assert "Shuffle tree vs shared-memory" in _sections("cuda.md", "R")["R7"]
