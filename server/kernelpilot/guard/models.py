"""Models of the guard: the reference contract a task declares, the rejections and the evidence (cheap:
pydantic only; `tasks.models` and `timing.models` import these)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Each rejection is its own status so `exp failures` tells the next attempt which defence it met.
RejectStatus = Literal[
    "rejected_side_stream",
    "rejected_thread",
    "rejected_lazy_output",
    "rejected_timer_replaced",
    "rejected_constant_output",
    "rejected_cached_output",
    "rejected_stale_output",
    "rejected_input_mutation",
    "rejected_precision",
    "rejected_shape_specific",
    "rejected_wrong_output",
    "rejected_nondeterministic",
    "rejected_impossible",
    "rejected_timed_output",
    "rejected_baseline_tampered",
    "rejected_timer_disagree",
    "rejected_task_tampered",
]
REJECT_STATUSES: tuple[str, ...] = RejectStatus.__args__  # type: ignore[attr-defined]

Check = Literal["semantic", "observation", "physics", "baseline"]


class Tolerance(BaseModel):
    """|out - ref| <= atol + rtol * |ref| elementwise, against a float64 reference."""

    model_config = ConfigDict(extra="forbid")

    rtol: float = Field(gt=0, description="Relative tolerance.")
    atol: float | None = Field(
        None, ge=0, description="Absolute tolerance; None: rtol x RMS of the reference output."
    )


class RooflineSpec(BaseModel):
    """How `physics` counts the op from a contract shape: roofline op kind + its fields.

    A value is a number, a shape key (`"m"`) or a product of keys (`"rows*cols"`).
    """

    model_config = ConfigDict(extra="forbid")

    op: Literal["gemm", "bmm", "elementwise", "reduction", "softmax", "layernorm", "rmsnorm", "attention"]
    params: dict[str, int | float | bool | str] = Field(default_factory=dict)


class Selection(BaseModel):
    """A selection op (top-k, gating): ids judged as sets with tie tolerance, values at the chosen ids.

    The candidate returns a tuple with the `values` and `ids` outputs; the reference returns the same
    tuple followed by the scores of every entry along `dim` (the quantity ranked), which decide ties
    (`guard.selection`, docs/guard.md)."""

    model_config = ConfigDict(extra="forbid")

    ids: int = Field(ge=0, description="Index of the ids output (integers) in the output tuple.")
    values: int | None = Field(None, ge=0, description="Index of the values output; None: ids only.")
    k: int | str = Field(description="Entries selected per row: a number or a shape key.")
    dim: int = Field(-1, description="The dimension selected along (of the scores; ids and values too).")
    largest: bool = Field(True, description="True: the k highest scores; False: the k lowest.")
    order: Literal["any", "descending", "ascending"] = Field(
        "any", description="Order of the ids within a row by reference score (ties in any order)."
    )
    values_dtype: str | None = Field(None, description="dtype of the values output; None: the contract's.")
    tie_rtol: float | None = Field(
        None,
        gt=0,
        description="Scores this close (relative) to the k-th tie with it; None: the tolerance's rtol.",
    )
    tie_atol: float | None = Field(
        None, ge=0, description="Absolute part of the tie; None: tie_rtol x RMS of the row's scores."
    )

    @field_validator("ids", "values")
    @classmethod
    def _small(cls, v: int | None) -> int | None:
        if v is not None and v > 1:
            raise ValueError("a selection's outputs are (values, ids) in either order: indices 0 and 1")
        return v


class Contract(BaseModel):
    """The reference contract of a task (the `contract` key of task.json)."""

    model_config = ConfigDict(extra="forbid")

    module: str = Field(description="Python file (relative to the workdir) defining inputs and reference.")
    inputs: str = Field(
        "make_inputs",
        description="fn(shape: dict, dtype: str, seed: int, device: str) -> list of arrays/tensors.",
    )
    reference: str = Field("reference", description="fn(*inputs) -> output; called on float64 inputs.")
    candidate: str = Field(description="'file.py:function' the agent edits; fn(*inputs[, out=]) -> output.")
    shapes: list[dict[str, int]] = Field(
        min_length=1, description="Problem shapes; the first is timed. Include non tile-multiple sizes."
    )
    dtype: str = Field(description="Declared dtype of inputs and output (bf16, fp16, fp32, fp64, ...).")
    device: Literal["auto", "cuda", "cpu"] = "auto"
    tolerance: Tolerance | None = Field(None, description="Override of the default from dtype and op.")
    in_place: list[int] = Field(
        default_factory=list,
        description="Input indices the candidate may modify; the first is its output when it returns None.",
    )
    out: bool = Field(False, description="Pass a poisoned output buffer as the keyword `out`.")
    deterministic: bool = Field(True, description="Repeated calls on equal inputs must agree bitwise.")
    seeds: int = Field(2, ge=2, le=16, description="Fresh input sets checked per shape (values differ).")
    seed: int = Field(0, description="Base seed of the inputs factory.")
    reduction: str | None = Field(
        None, description="Shape key of the reduced length (K of a GEMM); widens the default tolerance."
    )
    roofline: RooflineSpec | None = Field(None, description="Op model for the physics floor; None skips it.")
    selection: Selection | None = Field(
        None, description="A selection op (top-k): ids as sets with tie tolerance; see docs/guard.md."
    )

    @field_validator("shapes")
    @classmethod
    def _shapes(cls, v: list[dict[str, int]]) -> list[dict[str, int]]:
        for s in v:
            if not s or any(n <= 0 for n in s.values()):
                raise ValueError("every shape is a non-empty mapping of positive sizes")
        return v


class Rejection(BaseModel):
    """Why a candidate is rejected: the check, its status and the evidence (text and numbers)."""

    check: Check
    status: RejectStatus
    evidence: str
    numbers: dict[str, float] = Field(default_factory=dict)


class CallCheck(BaseModel):
    """One checked call: shape, seed and the error against the reference."""

    shape: dict[str, int]
    seed: int
    max_rel_err: float | None = None
    max_ulp_err: float | None = None
    ok: bool
    problem: str = ""


class HarnessReport(BaseModel):
    """What `harness` found: every call checked, the tolerance used and the rejection (if any)."""

    guarded: bool = True
    backend: str = Field(description="numpy | torch:<device>")
    dtype: str
    tolerance: Tolerance
    tolerance_source: str
    calls: list[CallCheck] = Field(default_factory=list)
    rejection: Rejection | None = None
    error: str = Field("", description="A candidate that raised on the timed shape (correctness_failed).")
    seconds: float = 0.0
    timed_refs: list[list[float]] = Field(
        default_factory=list,
        description="The reference on the timed input sets, as `Observation.timed_outputs` samples it.",
    )

    def summary(self) -> str:
        shapes = {tuple(sorted(c.shape.items())) for c in self.calls}
        rel = [c.max_rel_err for c in self.calls if c.max_rel_err is not None]
        ulp = [c.max_ulp_err for c in self.calls if c.max_ulp_err is not None]
        passed = sum(c.ok for c in self.calls)
        worst = f"max rel err {max(rel):.3g}, max {max(ulp):.3g} ULP" if rel and ulp else "no values compared"
        return (
            f"{passed}/{len(self.calls)} checked calls passed on {len(shapes)} shape(s) ({self.backend}, "
            f"{self.dtype}); {worst}; tolerance rtol {self.tolerance.rtol:.3g} ({self.tolerance_source}); "
            f"{self.seconds:.2f} s"
        )


class KernelSeen(BaseModel):
    name: str
    stream: int | None = None
    duration_us: float


class ThreadSeen(BaseModel):
    """A thread started while the guard watched (`observe.Watch`): what it runs and whose code that is."""

    name: str
    runs: str = Field(description="module.qualname of its target (or its class's run).")
    origin: Literal["candidate", "library"] = Field(
        description="candidate: its target is code outside the installed libraries and the standard library "
        "(rejected); library: judged by what it launches (`observe.judge_threads`)."
    )
    native_id: int | None = Field(None, description="The OS thread id (what the activity trace names).")
    ident: int | None = Field(
        None,
        description="threading.get_ident() (the pthread id): CUPTI names a launching thread by its low 32 "
        "bits (the H100 recording's pool thread: trace tid 1006630592 = 0x3bfff6c0).",
    )
    via: Literal["threading", "_thread"] = "threading"


class ForeignLaunch(BaseModel):
    """Device work the activity trace attributes to a thread other than the timing thread."""

    tid: int
    thread: str = Field(description="The thread's name where the guard knows it, else 'tid <n>'.")
    kernel: str
    launches: int
    stream: int | None = None


class TimedCheck(BaseModel):
    """One timed call's output, sampled right after the call (outside its event pair), against the float64
    reference on the values that call saw (`guard.timed.TimedCall`)."""

    call: int = Field(description="Index of the call among its closure's timed calls.")
    got: list[float | None] | None = Field(
        description="Element count, then the sampled values (None: not finite)."
    )
    ref: list[float] = Field(description="The reference's element count and values at the same positions.")
    why: str = Field("", description="Why the output could not be sampled (a lazy or subclassed tensor).")


class Observation(BaseModel):
    """The timed closure seen from outside: all-stream device work per call, threads, timing functions."""

    observed: bool = Field(description="False where no activity trace could be taken (no torch/CUDA).")
    why_unobserved: str = ""
    calls: int = 0
    device_busy_us_per_call: float = Field(
        0.0, description="Union of every kernel/copy/fill interval on every stream, per call."
    )
    busy_from: Literal["trace", "synchronize"] = Field(
        "trace",
        description="trace: the union from the activity trace; synchronize: the wall time per call between "
        "device-wide synchronizes, an upper bound of that union already within the timed figure's allowance "
        "(the trace was then not needed).",
    )
    kernel_sum_us_per_call: float = 0.0
    streams: list[int] = Field(default_factory=list)
    kernels: list[KernelSeen] = Field(default_factory=list, description="Largest first, at most 12.")
    synced_us_per_call: float | None = Field(
        None, description="Host wall time per call with a device-wide synchronize after the calls."
    )
    watch_findings: list[str] = Field(
        default_factory=list, description="Timing functions replaced and threads started (Watch)."
    )
    threads_started: list[str] = Field(default_factory=list)
    replaced: list[str] = Field(default_factory=list)
    seconds: float = Field(0.0, description="Wall time the trace and the synchronized re-timing took.")
    threads: list[ThreadSeen] = Field(
        default_factory=list, description="Every thread started while watched, candidate's and libraries'."
    )
    attributed: bool = Field(
        False, description="The trace named the launching thread of its device work (runtime/driver records)."
    )
    timing_tid: int | None = Field(None, description="The timing thread's id, as the trace names it.")
    launching_threads: int = Field(0, description="Threads the trace saw launch device work (0: no records).")
    foreign_launches: list[ForeignLaunch] = Field(
        default_factory=list, description="Device work launched from threads other than the timing thread."
    )
    timed_checks: list[TimedCheck] = Field(
        default_factory=list,
        description="Sampled timed calls: each output as returned, against the reference on fresh values.",
    )
    fresh_note: str = Field("", description="How the timed inputs got fresh values (or why they did not).")
    fresh_cost: dict[str, float] = Field(
        default_factory=dict,
        description="What the fresh values and the sampling cost this side: sampled_calls, fresh_us_per_call "
        "(device time of one call's fresh values and sample), checks_s (the references), hooks_host_s.",
    )
    timed_outputs: list[list[float | None] | None] = Field(
        default_factory=list,
        description="Per timed input set: its element count, then the last timed output at evenly spaced "
        "positions, None where not finite (contract tasks; eval holds them against the reference on the "
        "same inputs).",
    )


class PhysicsCheck(BaseModel):
    """The candidate time against the roofline floor of the timed shape, from cited peaks only."""

    checked: bool
    skipped_why: str = ""
    gpu_id: str | None = None
    time_us: float | None = None
    floor_us: float | None = None
    attainable_us: float | None = None
    arithmetic: str = ""
    citations: list[str] = Field(default_factory=list)
    flagged: bool = False
    rejection: Rejection | None = None
