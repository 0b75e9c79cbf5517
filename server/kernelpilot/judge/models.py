"""The judge's request (written by eval) and report (signed by the judge, read by eval): pydantic only."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from kernelpilot.guard.models import CallCheck, Contract, Rejection, Tolerance


class SideSpec(BaseModel):
    """One side to run: the tree its code is imported from."""

    model_config = ConfigDict(extra="forbid")

    name: Literal["baseline", "candidate"]
    root: str = Field(description="Folder the side's runner imports the candidate function from (its cwd).")


class JudgeRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    contract: Contract
    contract_root: str = Field(description="The committed tree the contract's module is loaded from.")
    allowed_files: list[str] = Field(description="Files the agent may edit: the judge never imports them.")
    sides: list[SideSpec] = Field(min_length=1, max_length=2)
    checked: Literal["baseline", "candidate"] = Field(description="The side whose semantic checks are run.")
    timing_mode: Literal["cold", "warm"] = "cold"
    pairs: int = Field(10, ge=2, le=1000, description="Timed batches per side.")
    warmup: int = Field(1, ge=0, le=1000, description="Untimed batches per side before timing.")
    timeout_s: float = Field(gt=0, description="Limit for one runner step (set-up, one batch).")
    env: dict[str, str] = Field(default_factory=dict)


class SideTiming(BaseModel):
    """A side's timed batches: per-call microseconds on the judge's clock, one figure per batch."""

    per_call_us: list[float] = Field(default_factory=list)
    runner_us: list[float] = Field(
        default_factory=list, description="The runner's own per-call figure per batch (advisory)."
    )
    calls_per_batch: int = 0
    checked_calls: int = 0
    sandbox: str = ""


JudgeStatus = Literal["passed", "rejected", "correctness_failed", "failed", "timeout"]


class JudgeReport(BaseModel):
    status: JudgeStatus
    rejection: Rejection | None = None
    error: str = Field(
        "", description="Why the judge could not pass the side (with the runner's last lines)."
    )
    side: str = Field("", description="The side a rejection, failure or timeout is about.")
    backend: str = ""
    dtype: str = ""
    tolerance: Tolerance | None = None
    tolerance_source: str = ""
    calls: list[CallCheck] = Field(default_factory=list)
    timing: dict[str, SideTiming] = Field(default_factory=dict)
    ratios: list[float] = Field(
        default_factory=list, description="Per pair: baseline batch time / candidate batch time."
    )
    notes: list[str] = Field(default_factory=list)
    phases_s: dict[str, float] = Field(
        default_factory=dict, description="Where the judge's wall time went (start-up, checks, timing, ...)."
    )
    device: str = "cpu"

    def summary(self) -> str:
        rel = [c.max_rel_err for c in self.calls if c.max_rel_err is not None]
        passed = sum(c.ok for c in self.calls)
        shapes = {tuple(sorted(c.shape.items())) for c in self.calls}
        worst = f"max rel err {max(rel):.3g}" if rel else "no values compared"
        tol = (
            f"rtol {self.tolerance.rtol:.3g} ({self.tolerance_source})" if self.tolerance else "no tolerance"
        )
        return (
            f"{passed}/{len(self.calls)} checked calls passed on {len(shapes)} shape(s) ({self.backend}, "
            f"{self.dtype}); {worst}; {tol}; isolated judge"
        )
