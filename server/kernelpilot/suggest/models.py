"""Request/result models of `suggest_experiments` (cheap to import)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kernelpilot.bottleneck.models import JsonText
from kernelpilot.foundation.models import Request, Result
from kernelpilot.foundation.text import clip


class SuggestRequest(Request):
    bottleneck: JsonText = Field(
        description="classify_bottleneck result: a JSON file path or inline JSON, either "
        '{"verdicts": [...]} or one verdict {"kernel", "verdict", "memory_level", "confidence", '
        '"evidence", ...}.'
    )
    isa: JsonText | None = Field(
        None,
        description="Optional ISA facts (JSON path or inline): one object, a list, or {kernel: facts}; keys "
        "used: kernel, registers, spills (or spill_bytes/spill_stores/spill_loads), occupancy_limiter, "
        "widest_load_bits, tensor_ops.",
    )
    history: JsonText | None = Field(
        None,
        description="Optional history (JSON list path/inline, or a ledger.jsonl / task folder): records with "
        "a change summary (lever / change_summary / summary / hypothesis) and status.",
    )
    task: str | None = Field(
        None,
        description="Optional task folder: its allowed files, metric and correctness checks fill the "
        "eval contract.",
    )
    file: list[str] = Field(default_factory=list, description="Files the change would touch; repeatable.")
    max_items: int = Field(8, ge=1, le=50, description="Length of the queue.")


class EvalContract(Result):
    metric: str
    direction: Literal["lower", "higher"]
    must: str = Field(description="What must happen for the hypothesis to count as confirmed.")
    correctness: list[str] = Field(description="Checks that must pass first.")
    prediction: str = Field(description="What should move, to compare against the measurement.")


class Suggestion(Result):
    rank: int
    label: Literal["hypothesis"] = "hypothesis"
    lever: str
    lever_type: str
    title: str
    target_kernel: str
    files: list[str]
    rationale: str
    evidence: list[str]
    source: str = Field(description="Where the lever's mechanism is explained.")
    risk: Literal["low", "medium", "high"]
    risk_note: str
    score: float = Field(description="Ranking score: rule weight x verdict confidence x ISA/history factors.")
    history_note: str = ""
    playbook: list[str] = Field(
        default_factory=list,
        description="Playbook sections that say how, for this kernel's shape (kernelpilot.suggest.playbook): "
        "a loop-free kernel never gets the loop-pipelining sections (triton.md L1 num_stages, cuda.md L3).",
    )
    eval_contract: EvalContract


class SuggestResult(Result):
    note: str
    suggestions: list[Suggestion]
    skipped: list[str] = Field(default_factory=list, description="Levers left out, with the reason.")
    stop_verdicts: list[str] = Field(
        default_factory=list,
        description="'<kernel>: <stop verdict>' per kernel whose bottleneck verdict carries one "
        "(kernelpilot.roofline.stop); stop_or_fuse is in the queue exactly when it says MET.",
    )

    def render_text(self) -> str:
        """Compact view: one line per lever plus its first reason; every field is in --json."""
        lines = [self.note.split(";")[0] + "; test each with `kernelpilot eval`."]
        one = len(self.stop_verdicts) == 1  # one kernel: its name is on every lever line already
        lines.extend(clip(v.split(": ", 1)[1] if one else v, 160) for v in self.stop_verdicts)
        prev = ""
        for s in self.suggestions[:TEXT_ITEMS]:
            hist = f"; {s.history_note}" if s.history_note else ""
            lines.append(
                f"{s.rank}. [HYPOTHESIS] {s.lever} on {s.target_kernel} "
                f"(score {s.score:.2f}, risk {s.risk}){hist}"
            )
            lines.append(f"   {clip(s.title, 68 if s.rank == 1 else 56)}")
            if s.playbook and s.rank == 1:  # section ids only; titles are in --json
                ids = ", ".join(
                    " ".join(p.removeprefix("playbooks/").split(" ")[:2]).rstrip(".") for p in s.playbook
                )
                lines.append(f"   how: {ids}")
            if s.evidence:
                first = s.evidence[0]
                same = first == prev
                lines.append("   because: the same cause" if same else f"   because {clip(first, 100)}")
                prev = first
        if len(self.suggestions) > TEXT_ITEMS:
            lines.append(f"({len(self.suggestions) - TEXT_ITEMS} more in --json)")
        if self.suggestions:
            lines.append(f"eval each: {self.suggestions[0].eval_contract.must}")
        if self.skipped:
            lines.append("skipped: " + clip("; ".join(self.skipped), 100))
        return "\n".join(lines)


TEXT_ITEMS = 4
