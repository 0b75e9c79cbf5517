"""docs/reference.md and the slash commands' argument hints are generated from the declarations and fresh;
tool names follow the documented pattern."""

from __future__ import annotations

import shutil
from pathlib import Path

from kernelpilot.adapters.reference import LEGACY_NAMES, REGENERATE, follows_naming, main, render, stale
from kernelpilot.capabilities import all_capabilities

REPO = Path(__file__).resolve().parents[2]


def test_generated_files_are_fresh():
    old = [str(p.relative_to(REPO)) for p in stale(REPO)]
    assert not old, f"stale generated files {old}: run `{REGENERATE}` and commit the result"


def test_reference_covers_every_tool_and_command():
    text = render()
    for cap in all_capabilities():
        assert f"### `kernelpilot {' '.join(cap.command)}` · `mcp: {cap.tool}`" in text
        for name in cap.request.model_fields:
            assert f"| `{name}` |" in text
    assert "`toolsets_enable`" in text and "## Prompts" in text


def test_a_stale_file_is_detected_and_rewritten(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    shutil.copytree(REPO / "skills" / ".commands", tmp_path / "skills" / ".commands")
    hint_file = tmp_path / "skills" / ".commands" / "kernel-fit.md"
    hint_file.write_text(hint_file.read_text().replace("argument-hint: <", "argument-hint: <old "))
    assert main(["--root", str(tmp_path), "--check"]) == 1
    assert REGENERATE in capsys.readouterr().err
    assert {p.name for p in stale(tmp_path)} == {"reference.md", "kernel-fit.md"}
    assert main(["--root", str(tmp_path), "--write"]) == 0
    assert stale(tmp_path) == []
    assert hint_file.read_text() == (REPO / "skills" / ".commands" / "kernel-fit.md").read_text()


def test_tool_names_follow_the_pattern():
    caps = all_capabilities()
    outside = {c.tool for c in caps if not follows_naming(c)}
    assert outside <= LEGACY_NAMES, f"tools outside the naming pattern: {sorted(outside - LEGACY_NAMES)}"
    assert {c.tool for c in caps} >= LEGACY_NAMES, "a legacy name left: drop it from LEGACY_NAMES"


def test_a_one_word_command_may_name_its_toolsets_concept_first():
    """`kernelpilot compare` is `time_compare` (the `time` concept of its toolset); a concept that is no
    one-word command of the same toolset, fails."""
    import dataclasses

    caps = all_capabilities()
    compare = next(c for c in caps if c.command == ("compare",))
    assert compare.tool == "time_compare" and follows_naming(compare, caps)
    assert not follows_naming(dataclasses.replace(compare, tool="spec_compare"), caps)  # spec: not in measure
    assert not follows_naming(dataclasses.replace(compare, tool="sweep_compare"), caps)  # not a command
    alone = [c for c in caps if c.command != ("time",)]
    assert not follows_naming(compare, alone)  # without `time` in the toolset the concept is unknown
