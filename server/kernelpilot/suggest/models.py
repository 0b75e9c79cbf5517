"""Request/result models of `suggest_experiments` (cheap to import)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from kernelpilot.models import Request, Result


class SuggestRequest(Request):
    bottleneck: str = Field(
        description="classify_bottleneck result: a JSON file path or inline JSON, either "
        '{"verdicts": [...]} or one verdict {"kernel", "verdict", "memory_level", "confidence", '
        '"evidence", ...}.'
    )
    isa: str | None = Field(
        None,
        description="Optional ISA facts (JSON path or inline): one object, a list, or {kernel: facts}; keys "
        "used: kernel, registers, spills (or spill_bytes/spill_stores/spill_loads), occupancy_limiter, "
        "widest_load_bits, tensor_ops.",
    )
    history: str | None = Field(
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
    eval_contract: EvalContract


class SuggestResult(Result):
    note: str
    suggestions: list[Suggestion]
    skipped: list[str] = Field(default_factory=list, description="Levers left out, with the reason.")

    def render_text(self) -> str:
        lines = [self.note, ""]
        for s in self.suggestions:
            lines.append(
                f"{s.rank}. [HYPOTHESIS] {s.lever} ({s.lever_type}) on {s.target_kernel} — risk {s.risk}, "
                f"score {s.score:.2f}"
            )
            lines.append(f"   {s.title}")
            lines.append(f"   why: {s.rationale}")
            for e in s.evidence[:4]:
                lines.append(f"   evidence: {e}")
            if s.history_note:
                lines.append(f"   history: {s.history_note}")
            lines.append(f"   files: {', '.join(s.files) or '(name them)'}; source: {s.source}")
            c = s.eval_contract
            lines.append(f"   eval: {c.must}; correctness: {'; '.join(c.correctness)}")
            lines.append(f"   predict: {c.prediction}")
        if self.skipped:
            lines.append("skipped: " + "; ".join(self.skipped))
        return "\n".join(lines)
