"""Pydantic models and typed errors of the gpu-wiki: cited values, load issues, and the tool requests/results.

Owns the data shapes only (cheap to import: the capability declarations import this module). Parsing,
loading and lookup live in `kernelpilot.wiki.core`; the citation audit in `kernelpilot.wiki.audit`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from kernelpilot.foundation.errors import UnknownSpecError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.wiki.errors import AmbiguousNameError, BareNumberError, UnitMismatchError, WikiConflictError

# The only units a wiki line may carry (line grammar: `kernelpilot.wiki.core` docstring).
UNITS: tuple[str, ...] = (
    "TFLOP/s",
    "TOP/s",
    "TB/s",
    "GB/s",
    "GB",
    "MB",
    "KB",
    "MHz",
    "W",
    "us",
    "count",
    "bytes",
    "inst/clk",
    "results/clk",
    "text",
)
UNKNOWN_TEXT = "UNKNOWN (gpu-wiki not found)"

WIKI_FIELD_DESCRIPTION = (
    "Extra wiki folder(s) that extend or override the bundled gpu-wiki-index (repeatable; also "
    "KERNELPILOT_WIKI_PATH, os.pathsep-separated). A user wiki cites as <its folder name>/<file>:L<line>."
)


__all__ = [
    "UNITS",
    "UNKNOWN_TEXT",
    "AmbiguousNameError",
    "AuditProblem",
    "AuditRequest",
    "AuditResult",
    "BareNumberError",
    "CitedValue",
    "GpuInfo",
    "GpusRequest",
    "GpusResult",
    "SpecRequest",
    "SpecResult",
    "UnitMismatchError",
    "UnknownSpecError",
    "WikiConflictError",
    "WikiIssue",
]


class CitedValue(BaseModel):
    """One wiki line: a hardware number (or text) with the exact file and line that states it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(description="metric key, e.g. bf16_dense_tflops")
    value: float | str = Field(description="the value: a number, or text for unit `text`")
    unit: str = Field(description="unit from the wiki unit vocabulary, e.g. TFLOP/s")
    path: str = Field(
        description="file relative to the wiki root's parent, e.g. gpu-wiki-index/nvidia/h100-sxm5.md"
    )
    line: int = Field(description="1-based line number in that file")
    source_text: str = Field(description="the provenance after `source:` or `measured:` on that line")
    measured: bool = Field(
        default=False, description="true for a `measured:` line (a ceiling measured on a device)"
    )
    value_text: str = Field(default="", description="the value exactly as written on the line")
    gpu_id: str = Field(default="", description="wiki GPU id this value belongs to")

    def written_value(self) -> str:
        if self.value_text:
            return self.value_text
        if isinstance(self.value, str):
            return f'"{self.value}"'
        return f"{self.value:g}"

    def citation(self) -> str:
        """`<metric>: <value> <unit> <- <path>:L<line>` (the only way a hardware number may be quoted)."""
        return f"{self.metric}: {self.written_value()} {self.unit} <- {self.path}:L{self.line}"

    def number(self) -> float:
        """The numeric value; a text spec here is a unit mismatch."""
        if isinstance(self.value, str):
            raise UnitMismatchError(
                f"{self.metric} is text ({self.value!r}), not a number ({self.path}:L{self.line})",
                "use a numeric metric",
            )
        return float(self.value)


class WikiIssue(BaseModel):
    """Something the loader noticed: a malformed or duplicate line (skipped), an override, a conflict."""

    kind: Literal["malformed", "duplicate", "override", "conflict", "unknown_metric", "index", "unindexed"]
    path: str = Field(description="file relative to the wiki root's parent")
    line: int | None = None
    message: str

    def location(self) -> str:
        return f"{self.path}:L{self.line}" if self.line else self.path

    def render(self) -> str:
        return f"{self.kind}: {self.location()}: {self.message}"


class GpuInfo(BaseModel):
    gpu_id: str
    name: str
    vendor: str
    file: str = Field(description="file relative to the wiki root's parent")
    aliases: list[str] = Field(default_factory=list)
    spec_count: int = 0
    measured_count: int = 0
    critical_metrics: list[str] = Field(
        default_factory=list,
        description="roofline/occupancy-critical metric keys for this GPU's vendor (filled with --missing)",
    )
    missing_metrics: list[str] = Field(
        default_factory=list,
        description="those of critical_metrics with no spec line: UNKNOWN (filled with --missing)",
    )
    issue_floor_missing: list[str] = Field(
        default_factory=list,
        description="instruction-issue floor keys (clock, SM/CU count, issue and pipe rates) without a spec "
        "line (filled with --missing)",
    )
    issue_floor_why: list[int] = Field(
        default_factory=list,
        description="why those are UNKNOWN: numbers (1-based) into the result's issue_floor_reasons, the "
        "reasons the file's `Issue-floor UNKNOWN:` line gives",
    )


# ---------------------------------------------------------------------------------------------- spec


class SpecRequest(Request):
    gpu: str = Field(
        description="GPU name, wiki id or alias: 'H100', 'h100-sxm5', 'sm_90', 'MI300X', 'gfx942'"
    )
    metric: str | None = Field(
        default=None,
        description=(
            "Metric key (e.g. bf16_dense_tflops, memory_bandwidth_tb_s) or a close name ('bf16 dense', "
            "'hbm bandwidth'); omit to list every spec of the GPU"
        ),
    )
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)


class SpecResult(Result):
    status: Literal["found", "unknown", "ambiguous"]
    gpu: str = Field(description="the name asked for")
    gpu_id: str | None = None
    metric: str | None = None
    values: list[CitedValue] = Field(default_factory=list)
    citations: list[str] = Field(default_factory=list, description="one citation line per value")
    candidates: list[str] = Field(default_factory=list, description="matching names when ambiguous")
    unknown: str | None = Field(default=None, description="the UNKNOWN text when not found")
    # the fix, for the CLI's error line (`cli_error`); private: the MCP answer has `unknown` and `candidates`
    # and the default tool list keeps its budget (tests/foundation/test_mcp_toolsets.py)
    _hint: str = PrivateAttr(default="")
    notes: list[str] = Field(
        default_factory=list,
        description="which part a name that fits several was read as (`H100`: the SXM5, not the PCIe or NVL; "
        "an architecture id such as `gfx942`)",
    )
    overrides: list[str] = Field(default_factory=list, description="user-wiki overrides that apply here")
    issues: list[str] = Field(
        default_factory=list, description="wiki load problems (malformed/conflict lines)"
    )

    def render_text(self) -> str:
        out: list[str] = []
        if self.status == "found":
            out.extend(self.citations)
            if self.metric is None and self.gpu_id:
                out.insert(0, f"# {self.gpu_id}: {len(self.values)} cited values")
            for o in self.overrides:
                out.append(f"override: {o}")
            out.extend(f"note: {n}" for n in self.notes)
        elif self.status == "ambiguous":
            out.append(f"ambiguous: {self.unknown or ''}")
            out.extend(f"  candidate: {c}" for c in self.candidates)
        else:
            out.append(self.unknown or UNKNOWN_TEXT)
        for issue in self.issues:
            out.append(f"wiki issue: {issue}")
        return "\n".join(out)

    def cli_error(self) -> UnknownSpecError | AmbiguousNameError | None:
        """UNKNOWN and ambiguous names print as the errors `roofline` raises for them (stderr, fix, code)."""
        if self.status == "found":
            return None
        issues = "".join(f"\nwiki issue: {i}" for i in self.issues)
        if self.status == "ambiguous":
            return AmbiguousNameError(
                (self.unknown or f"{self.gpu!r} is ambiguous") + issues,
                self._hint or "give one of the candidates",
                candidates=self.candidates,
            )
        return UnknownSpecError((self.unknown or UNKNOWN_TEXT) + issues, self._hint)

    def cli_exit_code(self) -> int:
        error = self.cli_error()
        return 0 if error is None else error.exit_code


class GpusRequest(Request):
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)
    missing: bool = Field(
        default=False,
        description=(
            "Per GPU, list which roofline/occupancy-critical metrics (dense bf16/fp16 and fp32 peaks, memory "
            "bandwidth, SM/CU count, L2, shared/LDS and registers per SM/CU) are UNKNOWN, with the count"
        ),
    )


class GpusResult(Result):
    gpus: list[GpuInfo]
    roots: list[str] = Field(description="wiki folders loaded, bundled first")
    issues: list[str] = Field(default_factory=list)
    missing: bool = Field(default=False, description="true when the gap report (--missing) was asked for")
    issue_floor_reasons: list[str] = Field(
        default_factory=list,
        description="each distinct reason a GPU file gives for an UNKNOWN issue-floor line, once; a GPU's "
        "issue_floor_why numbers (1-based) point here (filled with --missing)",
    )

    def render_text(self) -> str:
        out = [f"wiki roots: {', '.join(self.roots)}"]
        if self.missing:
            return "\n".join(out + self._render_missing())
        for g in self.gpus:
            m = f", {g.measured_count} measured" if g.measured_count else ""
            out.append(
                f"{g.gpu_id:<14} {g.vendor:<7} {g.name} ({g.spec_count} specs{m}) <- {g.file}"
                + (f"  aliases: {', '.join(g.aliases)}" if g.aliases else "")
            )
        for issue in self.issues:
            out.append(f"wiki issue: {issue}")
        return "\n".join(out)

    def _render_missing(self) -> list[str]:
        out = []
        total = 0
        for g in self.gpus:
            n, of = len(g.missing_metrics), len(g.critical_metrics)
            total += n
            gaps = ", ".join(g.missing_metrics) if n else "-"
            out.append(f"{g.gpu_id:<22} {n}/{of} UNKNOWN  {gaps}")
            if g.issue_floor_missing:
                refs = "".join(f"[{n}]" for n in g.issue_floor_why)
                out.append(f"    issue floor UNKNOWN: {', '.join(g.issue_floor_missing)} {refs}")
        complete = sum(1 for g in self.gpus if not g.missing_metrics)
        out.append(
            f"{len(self.gpus)} GPUs: {complete} with every roofline-critical metric cited, "
            f"{total} UNKNOWN in all (add a cited line to a user wiki, or `kernelpilot ceilings measure`)"
        )
        floors = sum(1 for g in self.gpus if not g.issue_floor_missing)
        out.append(
            f"{floors} GPUs with every instruction-issue floor line cited "
            "(clock, SM/CU count, issue and pipe rates); why the others are UNKNOWN:"
        )
        out.extend(f"  [{n}] {why}" for n, why in enumerate(self.issue_floor_reasons, start=1))
        for issue in self.issues:
            out.append(f"wiki issue: {issue}")
        return out


# --------------------------------------------------------------------------------------------- audit


class AuditRequest(Request):
    paths: list[str] = Field(
        description="Workspace folders or files to scan (.md and .json, recursively) for citation lines"
    )
    wiki: list[str] = Field(default_factory=list, description=WIKI_FIELD_DESCRIPTION)
    history: bool = Field(
        default=True,
        description="use the wiki file's git history (when in a git checkout) to tell stale from forged",
    )


class AuditProblem(BaseModel):
    kind: Literal["forged", "stale", "dangling"]
    location: str = Field(description="<workspace file>:L<line> where the citation is written")
    citation: str = Field(description="the citation as written")
    reason: str
    fix: str
    current: str | None = Field(default=None, description="the current wiki citation for that metric, if any")


class AuditResult(Result):
    ok: bool
    files_scanned: int
    citations_checked: int
    citations_ok: int
    problems: list[AuditProblem] = Field(default_factory=list)

    def render_text(self) -> str:
        out = [
            f"audit: {self.citations_checked} citations in {self.files_scanned} files: "
            f"{self.citations_ok} ok, {len(self.problems)} problems"
        ]
        for p in self.problems:
            out.append(f"{p.kind.upper()} {p.location}: {p.citation}")
            out.append(f"    why: {p.reason}")
            if p.current:
                out.append(f"    wiki now: {p.current}")
            out.append(f"    fix: {p.fix}")
        return "\n".join(out)

    def cli_exit_code(self) -> int:
        return 0 if self.ok else 1
