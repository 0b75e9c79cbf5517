"""The deterministic part of the skill evals (`skills/<skill>/evals/`, described in CONTRIBUTING.md).

Each skill keeps `evals/evals.json` (prompts with the tools a run should call, in order, and what it should
produce); the router also keeps `evals/triggers.json` (prompts that should and should not load it). A model
run grades behaviour; this test pins what can be checked without one: the structure, that every expected
tool exists in the capability registry and is one the skill's own text names, and that input files exist.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from tests.skills.test_skill_names import extract_mentions, live_registry

REPO = Path(__file__).resolve().parents[2]
SKILLS = REPO / "skills"
SKILL_DIRS = sorted(p for p in SKILLS.iterdir() if p.is_dir() and not p.name.startswith("."))
ROUTER = "gpu-kernel-optimizer"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Eval(_Strict):
    id: int = Field(ge=1)
    prompt: str = Field(min_length=10)
    expected_output: str = Field(min_length=10)
    files: list[str] = Field(description="input files, relative to the repository root")
    expected_tools: list[str] = Field(
        description="MCP tools the run should call, in this order (a subsequence)"
    )
    expectations: list[str] = Field(min_length=1)


class EvalSet(_Strict):
    skill_name: str
    evals: list[Eval] = Field(min_length=2)


class Trigger(_Strict):
    query: str = Field(min_length=5)
    should_trigger: bool


def problems(skill_dir: Path, repo: Path = REPO) -> list[str]:
    """Everything wrong with one skill's evals/evals.json, as readable lines."""
    path = skill_dir / "evals" / "evals.json"
    if not path.is_file():
        return [f"{skill_dir.name}: no evals/evals.json"]
    try:
        evals = EvalSet.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (ValueError, ValidationError) as exc:
        return [f"{skill_dir.name}: evals/evals.json: {exc}"]
    out = []
    if evals.skill_name != skill_dir.name:
        out.append(f"{skill_dir.name}: skill_name is {evals.skill_name!r}")
    ids = [e.id for e in evals.evals]
    if ids != list(range(1, len(ids) + 1)):
        out.append(f"{skill_dir.name}: ids must be 1..{len(ids)}, got {ids}")
    tools = live_registry().tools
    named = {
        m.text for md in skill_dir.glob("*.md") for m in extract_mentions(md.read_text()) if m.kind == "mcp"
    }
    for e in evals.evals:
        for tool in e.expected_tools:
            if tool not in tools:
                out.append(f"{skill_dir.name} eval {e.id}: no tool {tool!r} in the capability registry")
            elif tool not in named:
                out.append(
                    f"{skill_dir.name} eval {e.id}: {tool!r} is not named (`mcp: {tool}`) by the skill"
                )
        out += [f"{skill_dir.name} eval {e.id}: no file {f}" for f in e.files if not (repo / f).is_file()]
    return out


@pytest.mark.parametrize("skill", SKILL_DIRS, ids=[p.name for p in SKILL_DIRS])
def test_skill_evals_are_well_formed(skill: Path) -> None:
    assert problems(skill) == []


def test_router_trigger_set_has_both_sides() -> None:
    raw = json.loads((SKILLS / ROUTER / "evals" / "triggers.json").read_text(encoding="utf-8"))
    triggers = [Trigger.model_validate(t) for t in raw]
    queries = [t.query for t in triggers]
    assert len(set(queries)) == len(queries), "duplicate trigger queries"
    assert sum(t.should_trigger for t in triggers) >= 5
    assert sum(not t.should_trigger for t in triggers) >= 5


def test_the_check_catches_bad_evals(tmp_path: Path) -> None:
    skill = tmp_path / "kernel-x"
    (skill / "evals").mkdir(parents=True)
    (skill / "SKILL.md").write_text("Call `mcp: roofline` first.\n")
    good = {
        "id": 1,
        "prompt": "a prompt long enough",
        "expected_output": "what it should produce",
        "files": [],
        "expected_tools": ["roofline"],
        "expectations": ["it cites"],
    }
    bad = {**good, "id": 2, "files": ["missing.csv"], "expected_tools": ["no_such_tool", "evaluate"]}
    doc = {"skill_name": "kernel-y", "evals": [good, bad]}
    (skill / "evals" / "evals.json").write_text(json.dumps(doc))
    found = problems(skill, repo=tmp_path)
    assert found == [
        "kernel-x: skill_name is 'kernel-y'",
        "kernel-x eval 2: no tool 'no_such_tool' in the capability registry",
        "kernel-x eval 2: 'evaluate' is not named (`mcp: evaluate`) by the skill",
        "kernel-x eval 2: no file missing.csv",
    ]
    (skill / "evals" / "evals.json").write_text('{"skill_name": "kernel-x", "evals": []}')
    assert "evals/evals.json" in problems(skill, repo=tmp_path)[0]
