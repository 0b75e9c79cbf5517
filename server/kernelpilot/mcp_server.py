"""The `kernelpilot-mcp` server: a thin MCP adapter over the capability registry.

Every capability becomes one tool whose flat input schema comes from its pydantic request model and
whose structured output is its result model. Kernelpilot errors become tool errors (`isError`), so a
bad call never takes the server down. Bundled wiki files and playbooks are read-only resources.
Core functions run in a worker thread so long tools can stream progress without blocking the loop.
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resources import FileResource
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError

from kernelpilot import __version__
from kernelpilot.capability import Capability, all_capabilities
from kernelpilot.errors import KernelpilotError
from kernelpilot.models import Result
from kernelpilot.paths import bundled_dir

INSTRUCTIONS = (
    "kernelpilot turns a slow GPU kernel into one near the hardware limit with every number measured "
    "or cited. Hardware specs come only from gpu-wiki citations "
    "(`<metric>: <value> <unit> <- <path>:L<line>`); never invent a spec: a missing one is UNKNOWN. "
    "Start with `doctor` to see what this machine can do."
)


def _tool_error(cap: Capability, exc: KernelpilotError) -> ToolError:
    text = f"{type(exc).__name__}: {exc.message}"
    if exc.hint:
        text += f"\nfix: {exc.hint}"
    tail = getattr(exc, "stderr_tail", "")
    if tail:
        text += f"\n--- tool output tail ---\n{tail}"
    return ToolError(text)


def _make_tool_fn(cap: Capability) -> Callable[..., Awaitable[Result]]:
    """Build an async function with one keyword parameter per request field (a flat input schema)."""

    async def tool_fn(ctx: Context, **kwargs: Any) -> Result:
        try:
            request = cap.request.model_validate(kwargs)
        except ValidationError as exc:
            from kernelpilot.cli import validation_message

            raise ToolError(validation_message(exc, style="mcp")) from exc

        def progress(done: float, total: float | None = None, message: str = "") -> None:
            with contextlib.suppress(Exception):
                anyio.from_thread.run(ctx.report_progress, done, total, message or None)

        try:
            return await anyio.to_thread.run_sync(cap.invoke, request, progress)
        except KernelpilotError as exc:
            raise _tool_error(cap, exc) from exc

    params = [inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
    annotations: dict[str, Any] = {"ctx": Context}
    for name, field in cap.request.model_fields.items():
        ann: Any = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
        if field.is_required():
            default: Any = inspect.Parameter.empty
        else:
            default = field.get_default(call_default_factory=True)
        params.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=ann, default=default)
        )
        annotations[name] = ann
    annotations["return"] = cap.result
    tool_fn.__signature__ = inspect.Signature(params, return_annotation=cap.result)  # type: ignore[attr-defined]
    tool_fn.__annotations__ = annotations
    tool_fn.__name__ = cap.tool
    tool_fn.__doc__ = cap.description
    return tool_fn


def _add_resources(server: MCPServer[Any]) -> int:
    """Expose every bundled wiki file and playbook as a read-only resource (listed, so path-safe)."""
    count = 0
    for folder, scheme, pattern in (
        ("gpu-wiki-index", "wiki", "**/*.md"),
        ("playbooks", "playbooks", "**/*.md"),
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


def _make_tool(cap: Capability) -> Tool:
    """An SDK Tool for one capability whose argument model rejects unknown arguments (the SDK drops them)."""
    tool = Tool.from_function(
        _make_tool_fn(cap),
        name=cap.tool,
        title=cap.summary,
        description=cap.description,
        annotations=ToolAnnotations(readOnlyHint=cap.read_only, openWorldHint=False),
        structured_output=True,
    )
    base = tool.fn_metadata.arg_model
    config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")
    strict: type[ArgModelBase] = type(base.__name__, (base,), {"model_config": config})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def build_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer(
        name="kernelpilot",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[_make_tool(cap) for cap in all_capabilities()],
    )
    _add_resources(server)
    return server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kernelpilot-mcp", description="kernelpilot MCP server")
    parser.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--version", action="version", version=f"kernelpilot-mcp {__version__}")
    args = parser.parse_args(argv)
    server = build_server()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
