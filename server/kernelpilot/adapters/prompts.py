"""MCP prompts: the slash commands and the phase skills, for MCP hosts other than Claude Code.

The prose has one home: `skills/.commands/<name>.md` (what Claude Code runs as `/<name>`) and
`skills/<skill>/SKILL.md`. This module declares only each prompt's typed arguments; a command's
`argument-hint` line is rendered from them (`python -m kernelpilot.adapters.reference --write` rewrites it,
and a test fails when it is stale), and the prompt text is read from the same Markdown at request time, with
`$ARGUMENTS` filled from the arguments. So a prompt and its slash command cannot drift apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError, KernelpilotError
from kernelpilot.foundation.paths import bundled_dir


@dataclass(frozen=True)
class PromptArg:
    """One prompt argument. `hint` is its token in the slash command's `argument-hint`: `<...>` marks a
    required argument, `[...]` an optional one, `[--flag VALUE]` one passed as a flag."""

    name: str
    hint: str
    description: str

    @property
    def required(self) -> bool:
        return self.hint.startswith("<")

    @property
    def flag(self) -> str | None:
        m = re.match(r"\[(--[a-z0-9-]+)", self.hint)
        return m.group(1) if m else None


@dataclass(frozen=True)
class PromptSpec:
    """A prompt served from a slash command (`command`) or a phase skill (`skill`) Markdown file."""

    name: str
    arguments: tuple[PromptArg, ...]
    command: str = ""
    skill: str = ""

    def source(self) -> Path:
        root = bundled_dir("skills")
        return root / ".commands" / f"{self.command}.md" if self.command else root / self.skill / "SKILL.md"


_GPU = PromptArg("gpu", "[GPU]", "target GPU as named in the gpu-wiki (e.g. H100, h100-sxm5, MI300X, gfx942)")

PROMPTS: tuple[PromptSpec, ...] = (
    PromptSpec(
        "optimize-kernel",
        command="optimize-kernel",
        arguments=(
            PromptArg(
                "kernel", "<kernel file[:entry]>", "kernel source file, optionally with its entry point"
            ),
            _GPU,
            PromptArg("dtype", "[dtype]", "data type(s), e.g. bf16"),
            PromptArg("shapes", "[shapes]", "problem shapes, e.g. M=N=K=4096"),
            PromptArg("goal", "[goal]", "what counts as done, e.g. '90% of the roofline' or 'baseline only'"),
        ),
    ),
    PromptSpec(
        "kernel-roofline",
        command="kernel-roofline",
        arguments=(
            PromptArg("gpu", "<GPU>", "target GPU as named in the gpu-wiki (e.g. H100, MI300X)"),
            PromptArg(
                "op",
                '<op, e.g. "gemm M=4096 N=4096 K=4096 bf16" | "softmax rows=32768 cols=4096 fp16">',
                "the operation with its shapes and dtype",
            ),
            PromptArg(
                "measured_time", "[measured time]", "a measured kernel time (e.g. 812us) for % of peak"
            ),
        ),
    ),
    PromptSpec(
        "kernel-fit",
        command="kernel-fit",
        arguments=(
            PromptArg(
                "code_object",
                "<cubin|fatbin|hsaco|executable>",
                "path of the compiled code object (cubin, fatbin, HSACO or a host executable/library)",
            ),
            PromptArg("kernel", "[--kernel REGEX]", "regular expression selecting the kernel"),
            PromptArg("arch", "[--arch sm_90|gfx942]", "architecture to read when the file holds several"),
        ),
    ),
    PromptSpec(
        "workload-triage",
        command="workload-triage",
        arguments=(
            PromptArg(
                "target",
                "<file.py:factory | trace file>",
                "a step factory whose closure runs one step, or a recorded trace (Kineto/rocprofv3/nsys/ncu)",
            ),
            _GPU,
            PromptArg("steps", "[--steps N]", "steps to capture (default 10)"),
        ),
    ),
    PromptSpec(
        "kernel-triage",
        skill="kernel-triage",
        arguments=(
            PromptArg("kernel", "<kernel file>", "kernel source file to classify"),
            PromptArg("workspace", "[workspace]", "the optimization workspace from Step 0, if any"),
        ),
    ),
    PromptSpec(
        "kernel-baseline",
        skill="kernel-baseline",
        arguments=(
            PromptArg("workspace", "<workspace>", "the optimization workspace (from init_workspace)"),
            PromptArg("eval_command", "[eval command]", "command that runs the kernel and prints its time"),
        ),
    ),
    PromptSpec(
        "kernel-bottleneck",
        skill="kernel-bottleneck",
        arguments=(
            PromptArg("workspace", "<workspace>", "the optimization workspace with a stable baseline"),
            PromptArg("profile", "[profile]", "an existing profile (ncu CSV/.ncu-rep, rocprofv3 output)"),
        ),
    ),
    PromptSpec(
        "kernel-exp-history",
        skill="kernel-exp-history",
        arguments=(
            PromptArg("operator", "<operator>", "operator name, e.g. gemm or softmax"),
            PromptArg("dtype", "[dtype]", "data type, e.g. bf16"),
            PromptArg("arch", "[arch]", "architecture, e.g. sm_90 or gfx942"),
            PromptArg("change", "[change]", "the change you are about to make, in a few words"),
        ),
    ),
)

_FRONTMATTER = re.compile(r"\A---\n(.*?)\n---\n", re.S)


def argument_hint(spec: PromptSpec) -> str:
    """The slash command's `argument-hint` as rendered from the declared arguments."""
    return " ".join(a.hint for a in spec.arguments)


def read_markdown(path: Path) -> tuple[dict[str, str], str]:
    """(frontmatter keys -> text, body) of a command or skill file; folded `>-` values are joined."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputFileError(
            f"cannot read prompt source {path}: {exc.strerror}", "reinstall kernelpilot"
        ) from exc
    m = _FRONTMATTER.match(text)
    if not m:
        raise InputFileError(f"{path} has no frontmatter", "start the file with a --- block")
    meta: dict[str, str] = {}
    key = ""
    for line in m.group(1).splitlines():
        if line.startswith((" ", "\t")) and key:
            meta[key] = (meta[key] + " " + line.strip()).strip()
            continue
        key, _, value = line.partition(":")
        key = key.strip()
        value = value.strip()
        meta[key] = "" if value in (">-", ">", "|") else value
    return meta, text[m.end() :]


def render_arguments(spec: PromptSpec, values: dict[str, Any]) -> str:
    """The given arguments as one line, the way a user would type them after the slash command."""
    parts = []
    for arg in spec.arguments:
        value = str(values.get(arg.name) or "").strip()
        if not value:
            continue
        parts.append(f"{arg.flag} {value}" if arg.flag else f"{arg.name}: {value}")
    return "; ".join(parts) if parts else "(no arguments given: ask for what is missing)"


def render(spec: PromptSpec, values: dict[str, Any]) -> str:
    """The prompt text: the command body with `$ARGUMENTS` filled, or the skill's instructions after a
    one-line task naming the arguments."""
    unknown = sorted(set(values) - {a.name for a in spec.arguments})
    if unknown:
        raise InvalidArgumentError(
            f"prompt {spec.name} has no argument(s) {', '.join(unknown)}",
            f"its arguments are {', '.join(a.name for a in spec.arguments)}",
        )
    missing = [a.name for a in spec.arguments if a.required and not str(values.get(a.name) or "").strip()]
    if missing:
        raise InvalidArgumentError(
            f"prompt {spec.name} needs argument(s) {', '.join(missing)}",
            "; ".join(f"{a.name}: {a.description}" for a in spec.arguments if a.name in missing),
        )
    _meta, body = read_markdown(spec.source())
    line = render_arguments(spec, values)
    if spec.command:
        return body.replace("$ARGUMENTS", line).strip() + "\n"
    return (
        f"Follow the kernelpilot skill **{spec.skill}** below for: {line}\n"
        f"Files it links are the MCP resources kernelpilot://skills/{spec.skill}/<file>.\n\n"
        + body.strip()
        + "\n"
    )


def description(spec: PromptSpec) -> str:
    return read_markdown(spec.source())[0].get("description", "")


def add_prompts(server: Any) -> None:
    """Register every prompt on an `MCPServer` (typed arguments; text rendered per request)."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import INVALID_PARAMS

    from kernelpilot.adapters.mcp_sdk import make_prompt

    def prompt_fn(spec: PromptSpec) -> Any:
        def fn(**kwargs: Any) -> str:
            try:
                return render(spec, kwargs)
            except KernelpilotError as exc:
                raise MCPError(INVALID_PARAMS, f"{exc.message}; fix: {exc.hint}") from exc

        return fn

    for spec in PROMPTS:
        args = [(a.name, a.description, a.required) for a in spec.arguments]
        server.add_prompt(make_prompt(spec.name, description(spec), args, prompt_fn(spec)))
