"""The `kernelpilot-mcp` server: a thin MCP adapter over the capability registry.

Every capability becomes one tool whose flat input schema comes from its pydantic request model and
whose structured output is its result model. Kernelpilot errors become tool errors (`isError`), so a
bad call never takes the server down. Bundled wiki files and playbooks are read-only resources.
Core functions run in a worker thread so long tools can stream progress without blocking the loop.
"""

from __future__ import annotations

import argparse
import contextlib
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
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import ToolAnnotations
from pydantic import ConfigDict, Field, ValidationError, create_model

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
    """The async tool body: validate into the request model, run the core function in a worker thread."""

    async def tool_fn(ctx: Context, **kwargs: Any) -> Result:
        try:
            request = cap.request.model_validate(kwargs)
        except ValidationError as exc:
            from kernelpilot.cli import validation_message

            raise ToolError(validation_message(exc, style="mcp")) from exc

        def progress(done: float, total: float | None = None, message: str = "") -> None:
            # Best effort: a client that went away must not abort the work it asked for.
            with contextlib.suppress(RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
                anyio.from_thread.run(ctx.report_progress, done, total, message or None)

        try:
            return await anyio.to_thread.run_sync(cap.invoke, request, progress)
        except KernelpilotError as exc:
            raise _tool_error(cap, exc) from exc

    tool_fn.__name__ = cap.tool
    tool_fn.__doc__ = cap.description
    return tool_fn


class _StrictArguments(ArgModelBase):
    """Tool arguments that reject unknown keys (the SDK's default silently drops them).

    Built lazily (defer_build): validation schemas are compiled on a tool's first call, not at start-up.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)


def _arg_model(cap: Capability) -> type[ArgModelBase]:
    """A flat argument model with the request model's fields, descriptions and defaults."""
    fields: dict[str, Any] = {}
    for name, field in cap.request.model_fields.items():
        ann: Any = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
        default = ... if field.is_required() else field.get_default(call_default_factory=True)
        fields[name] = (ann, default)
    model: type[ArgModelBase] = create_model(f"{cap.tool}Arguments", __base__=_StrictArguments, **fields)
    return model


def _schemas(caps: Sequence[Capability]) -> dict[str, dict[str, Any]]:
    """Input and output JSON schemas of every tool, from the schema cache when it matches this install.

    Generating ~40 pairs of schemas costs a few hundred ms of pydantic work; the cache (keyed by the
    kernelpilot/mcp/pydantic versions and the package's source files) keeps cold start near the cost of
    importing the SDK. A missing, stale or unreadable cache is simply rebuilt.
    """
    from kernelpilot import schema_cache

    cached = schema_cache.load()
    if cached is not None and all(c.tool in cached for c in caps):
        return cached
    fresh = {
        cap.tool: {
            "input": _arg_model(cap).model_json_schema(by_alias=True),
            "output": FuncMetadata(arg_model=_StrictArguments, output_model=cap.result).output_schema or {},
        }
        for cap in caps
    }
    schema_cache.store(fresh)
    return fresh


def _make_tool(cap: Capability, schemas: dict[str, Any] | None = None) -> Tool:
    """An SDK Tool for one capability: a flat argument model built from the request model's fields
    and the result model as structured output (schemas from `_schemas` when given)."""
    arg_model = _arg_model(cap)
    if schemas is None:
        params = arg_model.model_json_schema(by_alias=True)
        meta = FuncMetadata(arg_model=arg_model, output_model=cap.result)
    else:
        params = schemas["input"]
        meta = FuncMetadata(arg_model=arg_model, output_model=cap.result, output_schema=schemas["output"])
    return Tool(
        fn=_make_tool_fn(cap),
        name=cap.tool,
        title=cap.summary,
        description=cap.description,
        parameters=params,
        fn_metadata=meta,
        is_async=True,
        context_kwarg="ctx",
        annotations=ToolAnnotations(readOnlyHint=cap.read_only, openWorldHint=False),
    )


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


def build_server() -> MCPServer[Any]:
    caps = all_capabilities()
    schemas = _schemas(caps)
    server: MCPServer[Any] = MCPServer(
        name="kernelpilot",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level="WARNING",
        tools=[_make_tool(cap, schemas[cap.tool]) for cap in caps],
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
