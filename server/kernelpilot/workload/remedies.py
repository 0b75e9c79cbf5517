"""`workload run --try-remedies`: the launch-overhead opportunity's remedies applied to the step and measured.

Why: the opportunity's saving is an estimate (launch-bound idle under the tracer, capped by the untraced
step); before a kernel goes to the baseline phase the triage should know what the standard remedies win on
this step. When the top opportunity is launch overhead and the step is a closure (spec), a child process
(`workload.remedies_child`) captures the step as a CUDA/HIP graph and compiles it with
`torch.compile(mode="reduce-overhead")`, checks each output equals eager's and times each paired against
eager; each remedy reports its measured step and saving beside the estimate, or why it could not apply.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.workload.models import (
    CaptureTarget,
    Opportunity,
    Remedy,
    RemedyReport,
    StepTiming,
    WorkloadResult,
)

METHOD = (
    "each remedy timed against eager in ABBA blocks (timing.paired.alternate_metrics): a sample is k steps "
    "back to back then a synchronize, host wall time / k (the step's period in a closed loop); medians with "
    "a 95 % bootstrap interval, the ratio remedy/eager by timing.stats.paired_ratio_ci"
)
NAMES = ("cuda_graph", "torch_compile_reduce_overhead")
STDERR_CHARS = 600  # of the child's stderr kept in the notes when a remedy failed


def why_not(res: WorkloadResult, spec: str | None) -> str | None:
    """Why the remedies are not tried on this result (None: try them)."""
    if not spec:
        return "remedies need the step as a closure (spec): a command's steps cannot be captured from here"
    if not res.opportunities:
        return "no opportunity found: nothing to remedy"
    top = res.opportunities[0]
    if top.kind != "launch_overhead":
        return f"the top opportunity is {top.kind} ({top.title}), not launch overhead"
    return None


def _remedy(raw: dict[str, Any]) -> Remedy:
    timing = {k: StepTiming(**raw[k]) for k in ("eager", "remedy") if isinstance(raw.get(k), dict)}
    fields = {k: raw.get(k) for k in Remedy.model_fields if k not in ("eager", "remedy") and k in raw}
    return Remedy(**fields, **timing)


def parse(doc: dict[str, Any], estimate: float | None, wall_s: float, ended: str | None) -> RemedyReport:
    """The child's JSON as a report; a remedy it did not reach reads `not_run` with why (`ended`)."""
    notes = list(doc.get("notes") or [])
    if doc.get("gpu"):
        notes.append(
            f"{doc['gpu']}, torch {doc.get('torch')}; {doc.get('steps_per_sample')} steps per sample "
            f"(eager probe {float(doc.get('eager_probe_us') or 0):.1f} µs/step)"
        )
    try:
        remedies = [_remedy(r) for r in doc.get("remedies") or []]
    except (ValidationError, TypeError) as exc:
        remedies = []
        notes.append(f"the remedies child wrote a result that does not read: {exc}")
    done = {r.name for r in remedies}
    for name in NAMES:
        if name not in done:
            remedies.append(Remedy(name=name, status="not_run", why=ended or "not reached"))
    return RemedyReport(
        estimate_us_per_step=estimate, method=METHOD, remedies=remedies, notes=notes, wall_s=wall_s
    )


def run_remedies(target: CaptureTarget, estimate: float | None, timeout_s: float) -> RemedyReport:
    """Run the child under `toolchain.run`; what it measured before a failure or the time limit is kept."""
    from kernelpilot.host.toolchain import run
    from kernelpilot.workload.capture import runner_env
    from kernelpilot.workload.runner import EXIT_NO_GPU, EXIT_USER

    assert target.spec is not None  # why_not refused a command
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kernelpilot-remedies-") as tmp:
        out = Path(tmp) / "remedies.json"
        argv = [
            sys.executable,
            "-m",
            "kernelpilot.workload.remedies_child",
            target.spec,
            "--workdir",
            target.workdir,
            "--warmup",
            str(target.warmup),
            "--kwargs",
            json.dumps(target.factory_kwargs),
            "--out",
            str(out),
        ]
        ended: str | None = None
        stderr = ""
        try:
            res = run(argv, timeout_s=timeout_s, cwd=target.workdir, env=runner_env(), check=False)
            stderr = res.stderr.strip()
            if res.returncode != 0:
                tail = (res.stderr.strip() or res.stdout.strip())[-600:]
                kind = {EXIT_NO_GPU: "no GPU", EXIT_USER: "the step failed"}.get(res.returncode, "it failed")
                ended = f"the remedies child exited {res.returncode} ({kind}): {tail}"
        except KernelpilotError as exc:  # the time limit (ToolTimeoutError) or the interpreter missing
            ended = f"the remedies child stopped: {exc.message}"
        doc: dict[str, Any] = {}
        if out.is_file():
            try:
                doc = json.loads(out.read_text())
            except json.JSONDecodeError:
                doc = {}
    report = parse(doc, estimate, time.perf_counter() - t0, ended)
    if ended:
        report.notes.append(ended)
    elif stderr and any(r.status in ("not_applicable", "failed") for r in report.remedies):
        # what torch logged while a remedy failed (inductor writes its error there too), the end of it
        report.notes.append(f"the remedies child's stderr ends: {stderr[-STDERR_CHARS:]}")
    return report


def estimate_of(opps: list[Opportunity]) -> float | None:
    top = next((o for o in opps if o.kind == "launch_overhead"), None)
    return top.saving_us_per_step if top else None
