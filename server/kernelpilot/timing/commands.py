"""Running a measurement command (an argv list) and reading its metric from the output.

Owns: argv validation (lists only, shell strings refused), metric extraction by a regex with one
group or a JSON key path, the typed errors for a command that fails, hangs or prints no metric
(each carrying the output tail). Programs run through `kernelpilot.host.toolchain` with a timeout that
kills the whole process group.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import (
    InvalidArgumentError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from kernelpilot.host import toolchain
from kernelpilot.timing.errors import CommandFailedError, CommandTimeoutError, MetricNotFoundError

OUTPUT_TAIL_CHARS = 4000
_SHELL_CHARS = re.compile(r"[\s|;&<>$`*?(){}]")


def check_argv(argv: Sequence[str], field: str) -> list[str]:
    """Validate an argv list; a single element that looks like a shell command line is refused."""
    if isinstance(argv, str):
        raise InvalidArgumentError(
            f"{field} must be an argv list, not a shell string: {argv!r}",
            'give one element per argument, e.g. ["python", "bench.py", "--n", "4096"]',
        )
    args = [str(a) for a in argv]
    if not args or not args[0]:
        raise InvalidArgumentError(f"{field} is empty", "give the program and its arguments")
    if len(args) == 1 and _SHELL_CHARS.search(args[0]):
        raise InvalidArgumentError(
            f"{field} looks like a shell string ({args[0]!r}); commands are argv lists and never "
            "run through a shell",
            f"split it into arguments (repeat --{field.replace('_', '-')} once per argument, or give a "
            'JSON list like ["python","bench.py"]); wrap pipelines in a script',
        )
    return args


def coerce_argv(value: Any) -> Any:
    """Pydantic 'before' helper: a one-element list holding a JSON array is decoded to that array."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        text = value[0].strip()
        if text.startswith("["):
            try:
                decoded = json.loads(text)
            except json.JSONDecodeError:
                return value
            if isinstance(decoded, list) and all(isinstance(x, str) for x in decoded):
                return decoded
    return value


def coerce_argv_list(value: Any) -> Any:
    """Pydantic 'before' helper for a list of argv lists: string elements are decoded as JSON arrays."""
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for item in value:
        if isinstance(item, str):
            try:
                decoded = json.loads(item)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f'each correctness command must be a JSON argv list like ["python","check.py"], '
                    f"got {item!r}"
                ) from exc
            out.append(decoded)
        else:
            out.append(item)
    return out


def tail(text: str, chars: int = OUTPUT_TAIL_CHARS) -> str:
    return text[-chars:]


def combined_output(stdout: str, stderr: str) -> str:
    parts = []
    if stdout.strip():
        parts.append(stdout.rstrip())
    if stderr.strip():
        parts.append("--- stderr ---\n" + stderr.rstrip())
    return "\n".join(parts)


@dataclass(frozen=True)
class CommandOutput:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float

    @property
    def output_tail(self) -> str:
        return tail(combined_output(self.stdout, self.stderr))


def run_command(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None,
    timeout_s: float,
    field: str = "command",
) -> CommandOutput:
    """Run argv once; raise CommandTimeoutError / CommandFailedError (with output tail) on failure."""
    args = check_argv(argv, field)
    try:
        res = toolchain.run(args, cwd=cwd, env=env, timeout_s=timeout_s, check=False)
    except ToolTimeoutError as exc:
        raise CommandTimeoutError(
            f"{field} {args!r} did not finish within {timeout_s:g} s; its process group was killed",
            "raise timeout_s, or make the command shorter",
            stderr_tail=exc.message,
        ) from None
    except ToolNotFoundError as exc:
        raise InvalidArgumentError(f"{field}: {exc.message}", exc.hint) from None
    out = CommandOutput(res.argv, res.returncode, res.stdout, res.stderr, res.duration_s)
    if res.returncode != 0:
        raise CommandFailedError(
            f"{field} {args!r} exited with code {res.returncode}",
            "read the output tail; run the command by hand in the workdir",
            returncode=res.returncode,
            stderr_tail=out.output_tail,
        )
    return out


def compile_metric_regex(pattern: str) -> re.Pattern[str]:
    try:
        rx = re.compile(pattern, re.MULTILINE)
    except re.error as exc:
        raise InvalidArgumentError(
            f"metric_regex {pattern!r} is not a valid regex: {exc}", "fix it"
        ) from None
    if rx.groups != 1:
        raise InvalidArgumentError(
            f"metric_regex {pattern!r} must have exactly one capture group, has {rx.groups}",
            r"e.g. 'time_us: ([0-9.eE+-]+)' (use (?:...) for other groups)",
        )
    return rx


def _to_float(raw: Any, what: str, output: str) -> float:
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise MetricNotFoundError(
            f"{what} is {raw!r}, not a number", "print a plain number", stderr_tail=tail(output)
        ) from None
    if not math.isfinite(value):
        raise MetricNotFoundError(f"{what} is {raw!r}", "print a finite number", stderr_tail=tail(output))
    return value


def _json_lookup(doc: Any, path: str) -> Any:
    cur = doc
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and part.lstrip("-").isdigit() and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            raise KeyError(part)
    return cur


def extract_metric(stdout: str, stderr: str, *, regex: str | None, json_key: str | None) -> float:
    """The metric from a command's output: last regex match (stdout, then stderr) or a JSON key path.

    JSON: the whole stdout, else the last stdout line that parses as a JSON object. Key paths are
    dot-separated; integers index lists (`results.0.time_us`).
    """
    output = combined_output(stdout, stderr)
    if regex is not None:
        rx = compile_metric_regex(regex)
        for text in (stdout, stderr):
            matches = rx.findall(text)
            if matches:
                return _to_float(matches[-1], f"metric_regex match {matches[-1]!r}", output)
        raise MetricNotFoundError(
            f"the output carries no match of metric_regex {regex!r}",
            "make the command print the metric, or fix the regex",
            stderr_tail=tail(output),
        )
    if json_key is not None:
        docs: list[Any] = []
        try:
            docs.append(json.loads(stdout))
        except json.JSONDecodeError:
            for line in reversed(stdout.strip().splitlines()):
                line = line.strip()
                if line.startswith("{"):
                    try:
                        docs.append(json.loads(line))
                        break
                    except json.JSONDecodeError:
                        continue
        for doc in docs:
            try:
                return _to_float(_json_lookup(doc, json_key), f"JSON key {json_key!r}", output)
            except KeyError:
                continue
        raise MetricNotFoundError(
            f"the output carries no JSON document with key path {json_key!r}",
            "print one JSON object (whole stdout or one line) holding the key",
            stderr_tail=tail(output),
        )
    raise InvalidArgumentError("no metric given", "give metric_regex or metric_json_key")
