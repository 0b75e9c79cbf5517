"""The experiment record: one optimization attempt, its lineage, result, and why it worked or failed.

This is the contract every backend stores verbatim (as its JSON document) and every tool returns.
Validation is strict so that bad records are refused with the field named, before any SQL runs:
- `summary` is one line of at most 80 characters, "<what> - <result or why it failed>";
- `score` is the speed-up against the parent's baseline (> 1 is better), finite and positive;
- no text anywhere may hold a NUL character or a lone surrogate (neither survives PostgreSQL or
  UTF-8), and no number a NaN or infinity (they do not survive JSON), so what is stored is exactly
  what is read back;
- times are timezone-aware and normalised to UTC at microsecond precision.
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

RECORD_VERSION = 2
SUMMARY_MAX_CHARS = 80
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
_ID_RE = re.compile(ID_PATTERN)


class Status(StrEnum):
    """Outcome of one attempt."""

    success = "success"
    regression = "regression"
    neutral = "neutral"
    crash = "crash"
    incorrect = "incorrect"
    abandoned = "abandoned"


FAILURE_STATUSES = (Status.regression, Status.crash, Status.incorrect, Status.abandoned)


def check_text(value: str) -> str:
    """Refuse characters no backend can store faithfully: NUL and lone surrogates."""
    if "\x00" in value:
        raise ValueError("NUL character (\\x00) is not allowed in text")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(f"text is not valid Unicode (lone surrogate at position {exc.start})") from exc
    return value


def check_json_value(value: Any, where: str = "value") -> Any:
    """Walk a JSON-like value: strings clean, numbers finite, keys strings."""
    if isinstance(value, str):
        check_text(value)
    elif isinstance(value, bool) or value is None or isinstance(value, int):
        pass
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: NaN and infinity cannot be stored (not JSON)")
    elif isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ValueError(f"{where}: keys must be strings")
            check_text(k)
            check_json_value(v, f"{where}.{k}")
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_json_value(v, f"{where}[{i}]")
    else:
        raise ValueError(f"{where}: {type(value).__name__} is not a JSON value")
    return value


Text = Annotated[str, AfterValidator(check_text)]
JsonDict = Annotated[dict[str, Any], AfterValidator(check_json_value)]


def to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("time must carry a timezone (e.g. 2026-11-22T17:16:04Z)")
    return value.astimezone(UTC)


UtcTime = Annotated[datetime, AfterValidator(to_utc)]


def now_utc() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A fresh record id: `exp-` + 16 hex digits of a random UUID."""
    return "exp-" + uuid.uuid4().hex[:16]


def check_id(value: str) -> str:
    if not _ID_RE.match(value):
        raise ValueError(
            "ids are 1-128 characters of letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit"
        )
    return value


RecordId = Annotated[str, AfterValidator(check_id)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Environment(_Strict):
    """Software the attempt ran with."""

    driver: Text | None = Field(None, description="GPU driver version, e.g. 580.159.04.")
    toolkit: Text | None = Field(None, description="CUDA / ROCm toolkit version, e.g. 13.0.")
    libraries: dict[Text, Text] = Field(
        default_factory=dict, description="Library versions, e.g. {'torch': '2.11', 'triton': '3.6'}."
    )
    other: dict[Text, Text] = Field(default_factory=dict, description="Anything else worth keeping.")


class Description(_Strict):
    """The detailed account of an attempt: what was tried, what happened, why, and what to remember."""

    approach: Text = Field("", description="What was changed and how.")
    result: Text = Field("", description="What was measured.")
    why: Text = Field("", description="Why it helped or failed (the part future attempts need).")
    insight: Text = Field("", description="The key insight to carry forward.")

    def text(self) -> str:
        return "\n".join(p for p in (self.approach, self.result, self.why, self.insight) if p)


class VerdictSnapshot(BaseModel):
    """A stored copy of a `bottleneck.models.BottleneckVerdict`; extra keys of newer verdicts are kept."""

    model_config = ConfigDict(extra="allow")

    kernel: Text
    verdict: Literal["compute_bound", "memory_bound", "latency_bound", "sync_bound", "unknown"]
    memory_level: Literal["dram", "l2", "l1_shared"] | None = None
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[JsonDict] = Field(default_factory=list)
    next_measurements: list[Text] = Field(default_factory=list)

    @model_validator(mode="after")
    def _extras_clean(self) -> VerdictSnapshot:
        check_json_value(self.model_extra or {}, "verdict")
        return self


class Profiling(_Strict):
    """Profiling information of the attempt's kernel(s)."""

    verdicts: list[VerdictSnapshot] = Field(default_factory=list, description="Bottleneck verdicts.")
    key_metrics: JsonDict = Field(
        default_factory=dict, description="Key profiler metrics by name, e.g. {'dram_throughput_pct': 91.2}."
    )


class Links(_Strict):
    """Where the evidence lives, relative to the workspace root."""

    workspace: Text | None = Field(None, description="Workspace directory.")
    ledger: Text | None = Field(None, description="Ledger line, e.g. 'ledger.jsonl#L12'.")
    result_json: Text | None = Field(None, description="The eval result.json.")
    files: list[Text] = Field(default_factory=list, description="Other files (kernels, profiles, plans).")


class ExperimentRecord(_Strict):
    """One optimization attempt."""

    record_version: Literal[2] = 2
    id: RecordId = Field(default_factory=new_id, description="Record id (generated when omitted).")
    parent_id: RecordId | None = Field(None, description="The record this attempt started from (lineage).")
    created: UtcTime = Field(default_factory=now_utc, description="When the attempt was made (UTC).")
    updated: UtcTime | None = Field(None, description="Last update time (UTC), None if never updated.")
    operator: Text = Field(min_length=1, description="Operator signature, e.g. 'gemm' or 'softmax(rows)'.")
    dtype: Text = Field("", description="Dtype signature, e.g. 'bf16*bf16->fp32'.")
    shapes: dict[Text, int | list[int]] = Field(
        default_factory=dict, description="Problem shapes by name, e.g. {'M': 4096, 'x': [8, 1024]}."
    )
    gpu: Text = Field("", description="Target GPU id, e.g. 'h100-sxm5'.")
    arch: Text = Field("", description="Target architecture / ISA, e.g. 'sm_90' or 'gfx942'.")
    environment: Environment = Field(default_factory=Environment)
    base_commit: Text | None = Field(None, description="Commit the change was made on.")
    diff_hash: Text | None = Field(None, description="Hash of the change's diff.")
    summary: Text = Field(description="One line, <= 80 chars: '<what> - <result or why it failed>'.")
    description: Description = Field(default_factory=Description)
    raw_result: JsonDict = Field(default_factory=dict, description="Raw result, e.g. per-kernel breakdown.")
    score: float | None = Field(None, description="Speed-up vs the parent's baseline; > 1 is better.")
    status: Status
    is_buggy: bool = Field(False, description="The attempt produced a bug (crash, wrong result).")
    error_message: Text | None = Field(None, description="The error, when is_buggy.")
    profiling: Profiling = Field(default_factory=Profiling)
    tags: list[Text] = Field(default_factory=list, description="Free tags, e.g. 'tiling', 'tma'.")
    links: Links = Field(default_factory=Links)

    @field_validator("summary")
    @classmethod
    def _summary(cls, value: str) -> str:
        if "\n" in value or "\r" in value:
            raise ValueError("summary must be one line")
        if not value.strip():
            raise ValueError("summary must not be empty")
        if len(value) > SUMMARY_MAX_CHARS:
            raise ValueError(f"summary is {len(value)} characters, at most {SUMMARY_MAX_CHARS} allowed")
        if " - " not in value:
            raise ValueError("summary must read '<what> - <result or why it failed>' (missing ' - ')")
        return value

    @field_validator("score")
    @classmethod
    def _score(cls, value: float | None) -> float | None:
        if value is not None and (not math.isfinite(value) or value <= 0):
            raise ValueError("score is a speed-up ratio: a finite number > 0 (1.0 = no change)")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not tag.strip() or len(tag) > 64 or any(c in tag for c in "\n\r\t"):
                raise ValueError(f"tag {tag!r} must be 1-64 characters on one line")
        if len(set(value)) != len(value):
            raise ValueError("tags must not repeat")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> ExperimentRecord:
        if self.parent_id is not None and self.parent_id == self.id:
            raise ValueError("parent_id: a record cannot be its own parent")
        if self.is_buggy and not self.error_message:
            raise ValueError("error_message: required when is_buggy is true")
        return self

    def what(self) -> str:
        """The '<what>' part of the summary."""
        return self.summary.split(" - ", 1)[0]

    def why_text(self) -> str:
        """The best one-line answer to 'why did it fail / work'."""
        for part in (self.description.why, self.error_message or "", self.summary.split(" - ", 1)[-1]):
            if part:
                return " ".join(part.split())
        return ""
