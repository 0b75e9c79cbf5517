"""`create_task`: write task.json and TASK.md for a bounded optimization task."""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, StateError
from kernelpilot.guard.models import Contract
from kernelpilot.tasks.models import (
    CreateTaskRequest,
    CreateTaskResult,
    Metric,
    Task,
    TaskEnvironment,
)
from kernelpilot.tasks.store import atomic_write_json
from kernelpilot.timing import instrumentation
from kernelpilot.timing.commands import check_argv, compile_metric_regex

GUARD_SPEC = "kernelpilot.guard.timed:make"  # the factory that times a contract task's candidate
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


PYTHON_TOKEN = "{python}"
"""argv[0] of a task command that means "the interpreter running kernelpilot at eval time", so task.json
names no machine's interpreter path (`interpreter_argv` resolves it)."""


CLI_MODULE = "kernelpilot"
"""What `python -m` runs for the CLI in a stored task command (`kernelpilot/__main__.py`)."""
LEGACY_CLI_MODULE = "kernelpilot.cli"
"""The CLI's module before it moved into `kernelpilot.adapters`: older task.json files still name it."""


def interpreter_argv(argv: list[str]) -> list[str]:
    """A stored task command made runnable here: `{python}` becomes this process's interpreter, and a
    `-m kernelpilot.cli` written before the CLI moved becomes `-m kernelpilot`."""
    out = [sys.executable if a == PYTHON_TOKEN else a for a in argv]
    return [
        CLI_MODULE if a == LEGACY_CLI_MODULE and i > 0 and out[i - 1] == "-m" else a
        for i, a in enumerate(out)
    ]


def _portable(argv: list[str], workdir: Path) -> list[str]:
    """A command as task.json stores it: this interpreter as `{python}`, paths inside workdir relative (the
    commands run in workdir), so the task evaluates from another checkout or virtual environment."""
    here = Path(sys.executable)
    out: list[str] = []
    for i, a in enumerate(argv):
        p = Path(a)
        if p.is_absolute() and p == here:  # this very path; another interpreter stays what it is
            out.append(PYTHON_TOKEN)
        elif p.is_absolute() and p.resolve().is_relative_to(workdir):
            rel = p.resolve().relative_to(workdir).as_posix()
            out.append(f"./{rel}" if i == 0 else rel)
        else:
            out.append(a)
    return out


def command_env(env: TaskEnvironment) -> dict[str, str]:
    """The environment every task command runs with: ours minus stripped variables, plus `set`."""
    out = instrumentation.stripped(patterns=env.strip)
    out.update(env.set)
    return out


def _uses_token(task: Task) -> bool:
    return any(PYTHON_TOKEN in c for c in (task.eval_command, *task.correctness_commands))


def render_task_md(task: Task) -> str:
    def argv(a: list[str]) -> str:
        return "`" + " ".join(a) + "`"

    lines = [
        f"# Task: {task.name}",
        "",
        task.description or "(no description)",
        "",
        f"- op: {task.op or '-'}",
        f"- shapes: {', '.join(task.shapes) or '-'}",
        f"- dtypes: {', '.join(task.dtypes) or '-'}",
        f"- metric: `{task.metric.name}` {task.metric.unit} — **{task.metric.direction} is better**"
        + (
            f" (regex `{task.metric.regex}`)"
            if task.metric.regex
            else f" (JSON key `{task.metric.json_key}`)"
        ),
        f"- eval command (argv, run in `{task.workdir}` relative to this folder): {argv(task.eval_command)}"
        + (f" (`{PYTHON_TOKEN}` = the Python running kernelpilot at eval time)" if _uses_token(task) else ""),
        *(
            [
                f"- timing: **{task.timing_mode}** GPU time (cold = L2 flushed before every launch, warm = "
                "back-to-back launches); each eval times the candidate and the baseline commit together, "
                "interleaved (`kernelpilot compare`), and judges the per-pair ratio"
            ]
            if task.timing_mode
            else []
        ),
        f"- runs: {task.runs} measured after {task.warmup} warm-up; "
        f"stable when CV <= {task.cv_threshold:.1%}; "
        f"a change under {task.min_effect:.1%} is neutral",
        "",
        "## Correctness (must pass before any timing)",
        *(
            _contract_lines(task)
            if task.contract
            else ["- UNGUARDED: only the commands below check correctness"]
        ),
        *([f"- {argv(c)}" for c in task.correctness_commands] or ["- no correctness command declared"]),
        "",
        "## Files you may edit",
        *[f"- `{f}`" for f in task.allowed_files],
        "",
        "Editing anything else makes the eval `out_of_scope` (git diff against the baseline commit).",
        "",
        "## Environment",
        f"- set: {task.environment.set or '{}'}",
        f"- stripped (profiling/instrumentation): {', '.join(task.environment.strip)}",
        f"- present and stripped at creation: {', '.join(task.environment.stripped_at_creation) or 'none'}",
        "",
        "## Loop",
        "1. `kernelpilot eval <this folder> --refresh-baseline` on a clean commit.",
        "2. Edit only the allowed files; `kernelpilot eval <this folder>` writes result.json "
        "and a ledger line.",
        "3. Only `improved` (CI of the speed-up above 1) counts; `unstable` means measure again, not a win.",
        "",
    ]
    return "\n".join(lines)


def _contract_lines(task: Task) -> list[str]:
    c = task.contract
    assert c is not None
    return [
        f"- GUARDED by the reference contract: candidate `{c.candidate}` against "
        f"`{c.module}:{c.reference}` on "
        f"{len(c.shapes)} shapes ({'; '.join(str(s) for s in c.shapes)}), dtype {c.dtype}, {c.seeds} fresh "
        "input sets each, outputs poisoned, inputs checksummed, determinism, real tensors; the timing is "
        "observed on every stream and checked against the roofline floor. A `rejected_*` status is never "
        "a win (see skills/kernel-profile-optimizer/SKILL.md).",
        f"- in-place inputs: {c.in_place or 'none'}; tolerance: "
        f"{c.tolerance.model_dump() if c.tolerance else 'default from the dtype (docs/guard.md)'}",
    ]


def _eval_command(req: CreateTaskRequest) -> tuple[list[str], dict[str, Any], Literal["cold", "warm"] | None]:
    """The eval argv, the metric and the timing mode: the user's command, or `kernelpilot time SPEC`."""
    if req.contract is not None:
        if req.eval_command or req.time_spec or req.metric_regex or req.metric_json_key:
            raise InvalidArgumentError(
                "--contract replaces --eval-command, --time-spec and the metric options",
                "give the contract alone: kernelpilot times its candidate through kernelpilot.guard.timed",
            )
        argv, metric, mode = _time_argv(GUARD_SPEC, req.timing_mode, observe=True)
        from kernelpilot.guard.timed import TIMED_SETS

        return [*argv, "--rotate", str(TIMED_SETS)], metric, mode
    if req.time_spec is None:
        if not req.eval_command:
            raise InvalidArgumentError(
                "give --eval-command (a program that prints its metric) or --time-spec file.py:function",
                "e.g. --time-spec bench.py:make (timed by `kernelpilot time`, cold L2 by default)",
            )
        metric = {
            "name": req.metric_name,
            "direction": req.direction,
            "unit": req.metric_unit,
            "regex": req.metric_regex,
            "json_key": req.metric_json_key,
        }
        return check_argv(req.eval_command, "eval_command"), metric, None
    if req.eval_command or req.metric_regex or req.metric_json_key:
        raise InvalidArgumentError(
            "--time-spec replaces --eval-command and the metric options",
            "give either --time-spec, or --eval-command with --metric-regex/--metric-json-key",
        )
    if ":" not in req.time_spec:
        raise InvalidArgumentError(
            f"time_spec {req.time_spec!r} must be 'file.py:function'", "name the launch-closure factory"
        )
    return _time_argv(req.time_spec, req.timing_mode, observe=False)


def _time_argv(
    spec: str, mode: Literal["cold", "warm"], *, observe: bool
) -> tuple[list[str], dict[str, Any], Literal["cold", "warm"]]:
    argv = [
        PYTHON_TOKEN, "-m", CLI_MODULE, "--json", "time", spec,
        "--timing", mode, "--verdict", mode, "--no-kernels", *(["--observe"] if observe else []),
    ]  # fmt: skip
    metric = {"name": f"{mode}_time_us", "direction": "lower", "unit": "us", "json_key": "stats.median"}
    return argv, metric, mode


def load_contract(path_arg: str, workdir: Path, allowed: list[str]) -> Contract:
    """The contract JSON file, validated: its files exist and the agent may not edit the reference."""
    from pydantic import ValidationError

    from kernelpilot.guard.errors import ContractError
    from kernelpilot.tasks.store import read_json

    path = workdir / path_arg
    if not path.is_file():
        raise InputFileError(f"contract file {path_arg!r} not found under {workdir}", "give a JSON file")
    try:
        contract = Contract.model_validate(read_json(path, "contract file"))
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = ".".join(str(p) for p in err["loc"]) or "contract"
        raise ContractError(
            f"{path_arg}: {loc}: {err['msg']}", "see docs/guard.md for the contract fields"
        ) from exc
    for what, rel in (("module", contract.module), ("candidate", contract.candidate.rpartition(":")[0])):
        if not (workdir / rel).is_file():
            raise InputFileError(f"contract {what} file {rel!r} not found under {workdir}", "check the path")
    import fnmatch

    if any(contract.module == a or fnmatch.fnmatchcase(contract.module, a) for a in allowed):
        raise InvalidArgumentError(
            f"the contract module {contract.module!r} is among the allowed files",
            "the agent may edit the candidate, never the inputs factory or the reference",
        )
    return contract


def create_task(req: CreateTaskRequest) -> CreateTaskResult:
    if not _NAME.match(req.name):
        raise InvalidArgumentError(
            f"name {req.name!r} is not a valid task name", "use letters, digits, . _ -"
        )
    workdir = Path(req.workdir).expanduser()
    if not workdir.is_dir():
        raise InputFileError(f"workdir {req.workdir!r} is not a directory", "give the repository root")
    workdir = workdir.resolve()
    checks = [_portable(check_argv(c, "correctness_command"), workdir) for c in req.correctness_command]
    eval_cmd, metric_kw, timing_mode = _eval_command(req)
    eval_cmd = _portable(eval_cmd, workdir)
    if timing_mode is None and (req.metric_regex is None) == (req.metric_json_key is None):
        raise InvalidArgumentError(
            "give exactly one of metric_regex or metric_json_key",
            "e.g. --metric-regex 'time_us: ([0-9.eE+-]+)'",
        )
    if req.metric_regex is not None:
        compile_metric_regex(req.metric_regex)
    if not req.allowed_file:
        raise InvalidArgumentError("no --allowed-file given", "name the file(s) the agent may edit")
    for f in req.allowed_file:
        if f.startswith("/") or ".." in Path(f).parts:
            raise InvalidArgumentError(f"allowed file {f!r} must be relative to workdir", "drop '..' / '/'")
        if not any(ch in f for ch in "*?[") and not (workdir / f).exists():
            raise InputFileError(f"allowed file {f!r} does not exist under {workdir}", "check the path")
    set_env: dict[str, str] = {}
    for item in req.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidArgumentError(
                f"--env {item!r} must be KEY=VALUE", "e.g. --env CUDA_VISIBLE_DEVICES=0"
            )
        set_env[key] = value
    env = TaskEnvironment(set=set_env)
    env.strip = env.strip + [s for s in req.strip_env if s not in env.strip]
    env.stripped_at_creation = instrumentation.present(patterns=env.strip)
    contract = load_contract(req.contract, workdir, req.allowed_file) if req.contract is not None else None
    task_dir = (
        Path(req.task_dir).expanduser() if req.task_dir else workdir / ".kernelpilot" / "tasks" / req.name
    )
    task_dir = task_dir.resolve()
    task_json = task_dir / "task.json"
    if task_json.exists() and not req.overwrite:
        raise StateError(
            f"{task_json} already exists", "pass --overwrite to replace it, or pick another name"
        )
    task = Task(
        name=req.name,
        op=req.op,
        shapes=req.shape,
        dtypes=req.dtype,
        description=req.description,
        workdir=os.path.relpath(workdir, task_dir),
        eval_command=eval_cmd,
        correctness_commands=checks,
        metric=Metric(**metric_kw),
        timing_mode=timing_mode,
        time_spec=req.time_spec,
        allowed_files=list(req.allowed_file),
        runs=req.runs,
        warmup=req.warmup,
        cv_threshold=req.cv_threshold,
        min_effect=req.min_effect,
        timeout_s=req.timeout_s,
        environment=env,
        contract=contract,
        created=now_iso(),
    )
    task_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(task_json, task.model_dump(mode="json"))
    write_text_atomic(task_dir / "TASK.md", render_task_md(task))
    rel = os.path.relpath(task_dir, workdir)
    here = Path.cwd().resolve()
    # `next:` must run from where the user is, not from --workdir (issue 42)
    from_here = os.path.relpath(task_dir, here) if task_dir.is_relative_to(here) else str(task_dir)
    return CreateTaskResult(
        task_dir=rel,
        task_json=os.path.join(rel, "task.json"),
        task_md=os.path.join(rel, "TASK.md"),
        task=task,
        task_dir_here=from_here,
    )
