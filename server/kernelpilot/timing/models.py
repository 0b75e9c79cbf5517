"""Request/result models of `time_kernel` (cheap to import: pydantic only)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from kernelpilot.models import Request, Result
from kernelpilot.timing.commands import coerce_argv
from kernelpilot.timing.stats import DEFAULT_CV_THRESHOLD, SampleStats


class TimeRequest(Request):
    """Time either a Python launch closure (`spec`) or a whole command (`command`)."""

    spec: str | None = Field(
        None,
        description="Python factory 'module:function' or 'path/to/file.py:function' returning a zero-arg "
        "launch closure (or a list of closures to rotate through; a `rotate` keyword gets the count).",
    )
    command: list[str] | None = Field(
        None,
        description="Instead of spec: a command as an argv list (repeat --command once per argument, "
        'use --command=-x for dashes, or one JSON list \'["python","bench.py"]\'). Never a shell string.',
    )
    metric_regex: str | None = Field(
        None, description="For command: regex with one capture group matching the metric in the output."
    )
    metric_json_key: str | None = Field(
        None, description="For command: dot key path of the metric in the JSON the command prints (a.b.0.c)."
    )
    metric_unit: str = Field("us", description="Unit of the command's metric (label only).")
    runs: int = Field(50, ge=1, le=100000, description="Measured runs.")
    warmup: int = Field(5, ge=0, le=100000, description="Untimed runs before measuring.")
    warmup_min_ms: float = Field(
        200.0,
        ge=0,
        le=60000,
        description="GPU path: keep warming up until this much wall time has passed, so an idle GPU's "
        "clocks have ramped up before the first timed run.",
    )
    l2_flush: bool = Field(
        False, description="GPU path: zero a buffer of 2x the device L2 size before every run (not timed)."
    )
    rotate: int = Field(1, ge=1, le=1024, description="Input sets to rotate through (passed as rotate=K).")
    device: Literal["auto", "cuda", "cpu"] = Field(
        "auto", description="auto: CUDA events when torch sees a GPU, else the labelled CPU fallback."
    )
    cv_threshold: float = Field(
        DEFAULT_CV_THRESHOLD, gt=0, description="Stable when stdev/mean <= this fraction (0.02 = 2 percent)."
    )
    timeout_s: float = Field(
        300.0, gt=0, description="Command path: per-run timeout; kills its process group."
    )
    workdir: str = Field(
        ".", description="Directory the command runs in / the spec is resolved from; git state."
    )

    @field_validator("command", mode="before")
    @classmethod
    def _argv(cls, v: Any) -> Any:
        return coerce_argv(v)


class TimeResult(Result):
    mode: Literal["callable", "command"]
    target: str = Field(description="The spec or the command line timed.")
    timer: str = Field(description="cuda_event | cpu_perf_counter_ns | command_metric")
    timer_note: str
    unit: str
    runs: int
    warmup: int
    rotate: int
    l2_flush_bytes: int | None = Field(description="Bytes zeroed before each run (2 x L2), None if no flush.")
    stats: SampleStats
    samples: list[float]
    environment: dict[str, Any]

    def render_text(self) -> str:
        s = self.stats
        u = self.unit
        lines = [
            f"timed: {self.target} ({self.mode}; timer={self.timer})",
            f"  note: {self.timer_note}",
            f"  median {s.median:.3f} {u}   min {s.min:.3f}   max {s.max:.3f}   IQR {s.iqr:.3f} {u}",
            f"  CV {s.cv * 100:.2f}%  -> {s.verdict}   ({s.count} runs after {self.warmup} warm-up"
            + (f", rotating {self.rotate} input sets" if self.rotate > 1 else "")
            + (f", L2 flush {self.l2_flush_bytes} B" if self.l2_flush_bytes else "")
            + ")",
        ]
        env = self.environment
        for g in env.get("gpus", []):
            lines.append(
                f"  GPU {g.get('name')} driver {g.get('driver_version')} SM clock {g.get('clocks.sm')} MHz "
                f"(max {g.get('clocks.max.sm')}) mem clock {g.get('clocks.mem')} MHz"
            )
        v = env.get("versions", {})
        lines.append("  versions: " + ", ".join(f"{k}={val}" for k, val in v.items() if val))
        if env.get("git_commit"):
            lines.append(f"  git {env['git_commit'][:12]} diff {str(env.get('git_diff_hash'))[:12]}")
        return "\n".join(lines)
