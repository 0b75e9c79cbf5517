"""The `kernelpilot-mcp` server: a thin MCP adapter over the capability registry.

Every capability becomes one tool whose flat input schema comes from its pydantic request model and
whose structured output is its result model. Kernelpilot errors become tool errors (`isError`), so a
bad call never takes the server down. Bundled wiki files, playbooks and skill files are read-only
resources; slash commands and phase skills are prompts (`kernelpilot.adapters.prompts`). Core functions
run in a worker thread so long tools can stream progress without blocking the loop, each under a time
limit (`call_limit_s`); every failure answers with its class, what was wrong and a `fix:` line, an
unexpected one and a tool of a toolset that is off included (`unexpected_error_text`, `unknown_tool_text`).

Tools are grouped in toolsets (declared beside each capability): `core` is served by default, others by
`--toolsets` / KERNELPILOT_TOOLSETS or the `toolsets_enable` tool. SDK internals live in `mcp_sdk`;
HTTP exposure rules (bearer token off loopback) in `http_auth`.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import functools
import os
import re
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from anyio.lowlevel import RunVar
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import FileResource
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import BaseModel, Field, ValidationError

from kernelpilot import __version__
from kernelpilot.adapters.mcp_answer import answer, answer_model
from kernelpilot.adapters.mcp_sdk import (
    OUTPUT_DROP,
    argument_model,
    compact_schema,
    intercept_tool_errors,
    make_tool,
    output_schema,
    register_tool,
    run_stdio,
    share_definitions,
)
from kernelpilot.capabilities import Capability, all_capabilities, argument_of_path, toolset_names
from kernelpilot.foundation.errors import InvalidArgumentError, KernelpilotError, ToolTimeoutError
from kernelpilot.foundation.models import Request, Result
from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.foundation.validation import validation_message

INSTRUCTIONS = (
    "kernelpilot turns a slow GPU kernel into one near the hardware limit with every number measured "
    "or cited. Hardware specs come only from gpu-wiki citations "
    "(`<metric>: <value> <unit> <- <path>:L<line>`); never invent a spec: a missing one is UNKNOWN. "
    "Start with `doctor` to see what this machine can do. Only the core tools are listed at first: call "
    "`toolsets_enable` (no arguments lists the toolsets) to add the workload (start there for a model "
    "step or a trace), isa, profile, workspace, tasks, measure, experiments or sweep tools before a step "
    "that needs them. A long answer is cut to its top rows; `full_result_path` names the whole result."
)

# Tools the MCP adapter serves beside the capabilities (they steer the server itself; no CLI command).
MCP_ONLY_TOOLS = frozenset({"toolsets_enable"})


_FLAG = re.compile(r"(?<![\w-])--([a-z][a-z0-9]*(?:[-_][a-z0-9]+)*)\b")


def mcp_argument_names(text: str, request: type[Request]) -> str:
    """`text` with the CLI options of `request`'s fields named as MCP arguments (`give --bytes-moved` ->
    give `bytes_moved`): core errors speak the CLI's language, an agent calls the tool with the argument."""

    def name(match: re.Match[str]) -> str:
        field = match.group(1).replace("-", "_")
        return f"`{field}`" if field in request.model_fields else match.group(0)

    return _FLAG.sub(name, text)


def _tool_error(cap: Capability, exc: KernelpilotError) -> ToolError:
    text = f"{type(exc).__name__}: {mcp_argument_names(exc.message, cap.request)}"
    if exc.hint:
        text += f"\nfix: {mcp_argument_names(exc.hint, cap.request)}"
    tail = getattr(exc, "stderr_tail", "")
    if tail:
        text += f"\n--- tool output tail ---\n{tail}"
    return ToolError(text)


ARGUMENTS_FIX = "give each named argument as the tool's input schema says"
TOOL_TIMEOUT_ENV = "KERNELPILOT_MCP_TOOL_TIMEOUT_S"
LONG_TOOL_TIMEOUT_ENV = "KERNELPILOT_MCP_LONG_TOOL_TIMEOUT_S"
DEFAULT_TOOL_TIMEOUT_S = 600.0  # readers, lookups, store queries (slowest call in bench/fuzz_mcp.py: 10 s)
DEFAULT_LONG_TOOL_TIMEOUT_S = 3600.0  # `long_running` tools: profiler runs, sweeps, workload captures


TOOL_WORKERS = 256  # threads tool bodies may hold at once (the SDK's default pool has 40 for everything)
_tool_limiter: RunVar[anyio.CapacityLimiter] = RunVar("kernelpilot_tool_limiter")


def _workers() -> anyio.CapacityLimiter:
    """The pool tool bodies run in, apart from the SDK's default one: calls blocked up to their limit (a
    slow network file, a profiler that hangs) hold these, never the threads the SDK itself needs, and
    TOOL_WORKERS of them can wait at once before a new call queues behind them. One per event loop
    (`RunVar`), as anyio keeps its own default limiter."""
    try:
        return _tool_limiter.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(TOOL_WORKERS)
        _tool_limiter.set(limiter)
        return limiter


def call_limit_s(cap: Capability) -> float:
    """Seconds one call of `cap` may run before it is cancelled: $KERNELPILOT_MCP_TOOL_TIMEOUT_S (default
    600) or, for a `long_running` capability, $KERNELPILOT_MCP_LONG_TOOL_TIMEOUT_S (default 3600)."""
    env, default = (
        (LONG_TOOL_TIMEOUT_ENV, DEFAULT_LONG_TOOL_TIMEOUT_S)
        if cap.long_running
        else (TOOL_TIMEOUT_ENV, DEFAULT_TOOL_TIMEOUT_S)
    )
    raw = os.environ.get(env)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (0 < value < float("inf")):
        raise InvalidArgumentError(f"{env}={raw[:40]!r} is not a number of seconds > 0", "unset it or fix it")
    return value


def _timeout_error(cap: Capability, limit_s: float) -> ToolTimeoutError:
    env = LONG_TOOL_TIMEOUT_ENV if cap.long_running else TOOL_TIMEOUT_ENV
    return ToolTimeoutError(
        f"{cap.tool} did not finish within its {limit_s:g} s limit and was cancelled (its worker was "
        "released; the server keeps serving)",
        f"check the path arguments (a FIFO, device or network file that never answers?); for a call that "
        f"really takes longer, raise {env} in the server's environment",
    )


def _make_tool_fn(cap: Capability) -> Callable[..., Awaitable[CallToolResult]]:
    """The async tool body: validate into the request model, run the core function in a worker thread,
    answer with the text view and a digest sized for the context window (`mcp_answer`).

    The call runs under its time limit (`call_limit_s`); past it, or when the client cancels the request,
    the await is cancelled and the thread abandoned (`abandon_on_cancel`), so the call's slot in the worker
    pool is released at once and other calls go on (issue 41: 39 calls blocked on FIFOs wedged the server).
    Python cannot stop a thread: an abandoned one ends when its blocking call returns, which is why every
    reader refuses FIFOs and devices before opening them.
    """

    async def tool_fn(ctx: Context, **kwargs: Any) -> CallToolResult:
        try:
            request = cap.request.model_validate(kwargs)
        except ValidationError as exc:
            raise ToolError(f"{validation_message(exc, style='mcp')}\nfix: {ARGUMENTS_FIX}") from exc

        def progress(done: float, total: float | None = None, message: str = "") -> None:
            # Best effort: a client that went away must not abort the work it asked for.
            with contextlib.suppress(RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                anyio.from_thread.run(ctx.report_progress, done, total, message or None)

        try:
            limit = call_limit_s(cap)
            with anyio.move_on_after(limit) as scope:
                result = await anyio.to_thread.run_sync(
                    cap.invoke, request, progress, abandon_on_cancel=True, limiter=_workers()
                )
                return await anyio.to_thread.run_sync(
                    answer, cap.tool, result, abandon_on_cancel=True, limiter=_workers()
                )
        except KernelpilotError as exc:
            raise _tool_error(cap, exc) from exc
        assert scope.cancelled_caught  # the only way out of the scope without a return
        raise _tool_error(cap, _timeout_error(cap, limit))

    tool_fn.__name__ = cap.tool
    tool_fn.__doc__ = cap.description
    return tool_fn


def unknown_tool_text(caps: Sequence[Capability], name: str) -> str:
    """The answer to a call of a tool this server does not serve: the toolset that holds it and how to
    enable it, or the closest tool names (issue 42: a bare `Unknown tool` left the agent guessing)."""
    shown = name if len(name) <= 80 else name[:80] + "..."
    cap = next((c for c in caps if c.tool == name), None)
    if cap is not None:
        return (
            f"Unknown tool: {shown} belongs to the `{cap.toolset}` toolset, which this server does not serve "
            f"yet\nfix: call `toolsets_enable` with enable=['{cap.toolset}'] (or start the server with "
            f"--toolsets {cap.toolset}, or set KERNELPILOT_TOOLSETS={cap.toolset}), then call {cap.tool} "
            "again"
        )
    close = difflib.get_close_matches(name[:200], [c.tool for c in caps], n=3, cutoff=0.6)
    near = f" (did you mean {', '.join(close)}?)" if close else ""
    return (
        f"Unknown tool: {shown!r} is no kernelpilot tool{near}\nfix: call `toolsets_enable` with no "
        "arguments to list every toolset and its tools"
    )


def _argument_involved(arguments: dict[str, Any], cause: BaseException) -> str | None:
    """The argument an unexpected error concerns: the one naming the file an OSError names, else the first
    text argument the error's message quotes."""
    text = str(cause)[:10_000]
    texts = {k: v for k, v in arguments.items() if isinstance(v, str) and len(v.strip()) >= 2}
    return argument_of_path(arguments, cause) or next((k for k, v in texts.items() if v in text), None)


def unexpected_error_text(name: str, arguments: dict[str, Any], cause: BaseException) -> str:
    """The answer to a call that failed without a kernelpilot error: the error's class and message, the
    argument involved and the fix, instead of the SDK's bare `Error executing tool X` (issue 41)."""
    if isinstance(cause, ValidationError):
        return f"{name}: {validation_message(cause, style='mcp')}\nfix: {ARGUMENTS_FIX}"
    message = str(cause).replace("\n", " ")
    message = message if len(message) <= 300 else message[:300] + "..."
    arg = _argument_involved(arguments, cause)
    about = f" (argument `{arg}`)" if arg else ""
    check = f"check `{arg}`" if arg else "check the arguments"
    return (
        f"{type(cause).__name__}{about}: {message}\nfix: {check}: kernelpilot has no typed error for this "
        f"case yet, so it is a bug worth reporting with the call's arguments (the server's log has the "
        f"traceback of {name})"
    )


def _schemas(caps: Sequence[Capability]) -> dict[str, dict[str, Any]]:
    """Compact input and output JSON schemas of every tool, from the schema cache when it matches.

    Generating ~40 pairs of schemas costs a few hundred ms of pydantic work; the cache (keyed by the
    kernelpilot/mcp/pydantic versions and the package's source files) keeps cold start near the cost of
    importing the SDK. A missing, stale or unreadable cache is simply rebuilt.
    """
    from kernelpilot.foundation import schema_cache

    cached = schema_cache.load()
    if cached is not None and all(c.tool in cached for c in caps):
        return cached
    fresh = _fresh_schemas(caps)
    schema_cache.store(fresh)
    return fresh


def _fresh_schemas(caps: Sequence[Capability]) -> dict[str, dict[str, Any]]:
    """Compact schemas; a large model several tools of one toolset return is published in one of them."""
    schemas = {
        cap.tool: {
            "input": compact_schema(argument_model(cap.tool, cap.request).model_json_schema(by_alias=True)),
            "output": compact_schema(output_schema(answer_model(cap.result)), OUTPUT_DROP),
        }
        for cap in caps
    }
    toolsets = sorted({c.toolset for c in caps})
    share_definitions(schemas, [[c.tool for c in caps if c.toolset == t] for t in toolsets])
    return schemas


def tool_annotations(cap: Capability) -> ToolAnnotations:
    """The four MCP behaviour hints, as declared beside the capability."""
    return ToolAnnotations(
        readOnlyHint=cap.read_only,
        destructiveHint=False if cap.read_only else cap.destructive,
        idempotentHint=cap.is_idempotent,
        openWorldHint=cap.open_world,
    )


def _make_tool(cap: Capability, schemas: dict[str, Any] | None = None) -> Tool:
    """An SDK Tool for one capability: a flat argument model built from the request model's fields
    and the result model as structured output (schemas from `_schemas` when given)."""
    if schemas is None:
        schemas = _fresh_schemas([cap])[cap.tool]
    return make_tool(
        _make_tool_fn(cap),
        name=cap.tool,
        title=cap.summary,
        description=cap.description,
        request=cap.request,
        result=answer_model(cap.result),
        input_schema=schemas["input"],
        result_schema=schemas["output"],
        annotations=tool_annotations(cap),
    )


def _add_resources(server: MCPServer[Any]) -> int:
    """Expose every bundled wiki file and playbook as a read-only resource (listed, so path-safe)."""
    count = 0
    for folder, scheme, pattern in (
        ("gpu-wiki-index", "wiki", "**/*.md"),
        ("playbooks", "playbooks", "**/*.md"),
        ("skills", "skills", "*/*.md"),  # the files skills link to, for hosts that use the prompts
    ):
        try:
            root = bundled_dir(folder)
        except KernelpilotError:
            continue
        for path in sorted(root.glob(pattern)):
            if not path.is_file():
                continue
            rel = path.relative_to(root).as_posix()
            server.add_resource(
                FileResource(
                    uri=f"kernelpilot://{scheme}/{rel}",
                    name=f"{scheme}/{rel}",
                    description=f"bundled {folder}/{rel} (read-only)",
                    mime_type="text/markdown",
                    path=path.resolve(),
                )
            )
            count += 1
    return count


def select_toolsets(names: str | Sequence[str] | None = None) -> tuple[str, ...]:
    """The toolsets to serve: `core` plus those named (comma-separated text or a list; `all` for every
    one); with no names, those in KERNELPILOT_TOOLSETS. An unknown name is refused with the known ones."""
    if names is None:
        names = os.environ.get("KERNELPILOT_TOOLSETS", "")
    if isinstance(names, str):
        names = names.split(",")
    wanted = {n.strip() for n in names if n.strip()}
    known = toolset_names()
    if "all" in wanted:
        return known
    unknown = sorted(wanted - set(known))
    if unknown:
        raise InvalidArgumentError(
            f"unknown toolset(s) {', '.join(unknown)}",
            f"choose from {', '.join(known)} or all (--toolsets / KERNELPILOT_TOOLSETS, comma-separated)",
        )
    return tuple(t for t in known if t == "core" or t in wanted)


def build_server(toolsets: str | Sequence[str] | None = None) -> MCPServer[Any]:
    """The server with the tools of `core` and the selected toolsets, the `toolsets_enable` tool that adds
    more at run time, the prompts and the bundled resources."""
    from kernelpilot.adapters import prompts

    selected = select_toolsets(toolsets)
    caps = all_capabilities()
    schemas = _schemas(caps)
    server: MCPServer[Any] = MCPServer(
        name="kernelpilot",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[_make_tool(cap, schemas[cap.tool]) for cap in caps if cap.toolset in selected],
    )
    register_tool(server, _toolsets_tool(server, caps, schemas))
    intercept_tool_errors(server, functools.partial(unknown_tool_text, caps), unexpected_error_text)
    prompts.add_prompts(server)
    _add_resources(server)
    return server


class ToolsetsRequest(Request):
    enable: list[str] = Field(
        default_factory=list,
        description="toolsets to add to this server's tools (e.g. ['isa', 'profile'], or ['all']); "
        "empty: only list them",
    )


class ToolsetInfo(BaseModel):
    name: str
    description: str
    enabled: bool
    tools: list[str]


class ToolsetsResult(Result):
    toolsets: list[ToolsetInfo]
    added: list[str] = Field(description="tools this call added")

    def render_text(self) -> str:
        lines = [f"{'+' if t.enabled else '-'} {t.name}: {', '.join(t.tools)}" for t in self.toolsets]
        return "\n".join(lines)


def _toolsets_tool(
    server: MCPServer[Any], caps: Sequence[Capability], schemas: dict[str, dict[str, Any]]
) -> Tool:
    """The MCP-only tool that lists toolsets and enables more of them for the running server."""
    from kernelpilot.capabilities import TOOLSETS

    async def toolsets_enable(ctx: Context, **kwargs: Any) -> CallToolResult:
        try:
            request = ToolsetsRequest.model_validate(kwargs)
            wanted = select_toolsets(request.enable) if request.enable else ()
        except ValidationError as exc:
            raise ToolError(f"{validation_message(exc, style='mcp')}\nfix: {ARGUMENTS_FIX}") from exc
        except KernelpilotError as exc:
            raise ToolError(f"{exc.message}\nfix: {exc.hint}") from exc
        served = {t.name for t in await server.list_tools()}
        added = []
        for cap in caps:
            if cap.toolset in wanted and cap.tool not in served:
                register_tool(server, _make_tool(cap, schemas[cap.tool]))
                added.append(cap.tool)
        if added:
            await ctx.notify_tools_changed()  # hosts on the 2026-07-28 protocol listen for it
            await ctx.session.send_tool_list_changed()  # hosts on earlier protocol versions
        served |= set(added)
        infos = []
        for name in toolset_names():
            tools = [c.tool for c in caps if c.toolset == name]
            summary = TOOLSETS.get(name) or "; ".join(c.summary for c in caps if c.toolset == name)
            infos.append(
                ToolsetInfo(name=name, description=summary, enabled=set(tools) <= served, tools=tools)
            )
        return answer("toolsets_enable", ToolsetsResult(toolsets=infos, added=added))

    return make_tool(
        toolsets_enable,
        name="toolsets_enable",
        title="List kernelpilot's toolsets and enable more of them (isa, profile, experiments, ...).",
        description=(
            "This server starts with the core tools only. Call with enable=['isa'] (or several, or ['all']) "
            "to add a toolset's tools, e.g. before following a skill step that names a tool you do not "
            "have; call with no arguments to see every toolset, its tools and whether it is enabled."
        ),
        request=ToolsetsRequest,
        result=answer_model(ToolsetsResult),
        input_schema=compact_schema(argument_model("toolsets_enable", ToolsetsRequest).model_json_schema()),
        result_schema=compact_schema(output_schema(answer_model(ToolsetsResult)), OUTPUT_DROP),
        # It changes which tools this server lists (not read-only), nothing else; enabling twice adds nothing.
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        ),
    )


def main(argv: Sequence[str] | None = None) -> int:
    from kernelpilot.adapters import http_auth

    parser = argparse.ArgumentParser(prog="kernelpilot-mcp", description="kernelpilot MCP server")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--toolsets",
        default=None,
        help="comma-separated toolsets to serve besides core, or 'all' "
        f"(default: $KERNELPILOT_TOOLSETS or core only; known: {', '.join(toolset_names())})",
    )
    parser.add_argument(
        "--auth-token",
        default=None,
        help="bearer token every HTTP request must carry (default: $KERNELPILOT_MCP_TOKEN, which other "
        "users cannot read in the process list); required when --host is not a loopback address",
    )
    parser.add_argument("--version", action="version", version=f"kernelpilot-mcp {__version__}")
    args = parser.parse_args(argv)
    try:
        server = build_server(args.toolsets)
        if args.transport == "stdio":
            anyio.run(run_stdio, server)
        else:
            token = args.auth_token or os.environ.get("KERNELPILOT_MCP_TOKEN") or None
            http_auth.serve(server, host=args.host, port=args.port, token=token)
    except KernelpilotError as exc:
        print(f"kernelpilot-mcp: error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"  fix: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
