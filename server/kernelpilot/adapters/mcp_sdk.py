"""The one place kernelpilot touches the MCP SDK's internals (names the SDK does not promise to keep).

The server builds tools from capability declarations rather than from decorated functions, so it needs the
SDK's tool registration model (`Tool`), its argument-model base (`ArgModelBase`) and its function metadata
(`FuncMetadata`, which validates arguments and converts results to structured output), and it adds
prebuilt tools to a running server through the tool manager; prompts render with their own argument checks
(`Prompt.render`). Every use of them is
here; `tests/foundation/test_mcp_sdk_contract.py` pins what this module relies on, so an SDK upgrade that
changes them fails that test by name instead of breaking tools at run time. Public SDK names (`MCPServer`,
`Context`, `ToolError`, `ToolAnnotations`, prompts, resources) are used directly by `mcp_server`.
"""

from __future__ import annotations

import json
import logging
import types
import typing
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.prompts.base import Message, PromptArgument, UserMessage
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

logger = logging.getLogger("kernelpilot.mcp")


class StrictArguments(ArgModelBase):
    """Tool arguments that reject unknown keys (the SDK's default silently drops them).

    Built lazily (defer_build): validation schemas are compiled on a tool's first call, not at start-up.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", defer_build=True)


def accepts_text(annotation: Any) -> bool:
    """Whether a field of this annotation takes a string as it is (`str`, `str | None`, `Annotated[str, ...]`,
    a union with `str`)."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return accepts_text(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(accepts_text(a) for a in typing.get_args(annotation))
    return False


class TextKeepingMetadata(FuncMetadata):
    """The SDK's function metadata, except that a text argument stays text.

    The SDK "pre-parses" any string argument that looks like JSON unless the field's annotation is exactly
    `str`: for `why: str | None`, the text `'{"a": 1}'` became a dict and was refused, and `exp_list
    text="null"` became None, silently dropping the filter (found with bench/fuzz_mcp.py, issue 41).
    Fields that take text are left as sent; the others (lists, objects, numbers) are pre-parsed as before.
    """

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        fields = self.arg_model.model_fields
        keep = {k: v for k, v in data.items() if k in fields and accepts_text(fields[k].annotation)}
        parsed = super().pre_parse_json({k: v for k, v in data.items() if k not in keep})
        return {k: keep[k] if k in keep else parsed[k] for k in data}


def argument_model(name: str, request: type[BaseModel]) -> type[ArgModelBase]:
    """A flat argument model with the request model's fields, descriptions and defaults."""
    fields: dict[str, Any] = {}
    for field_name, field in request.model_fields.items():
        ann: Any = Annotated[(field.annotation, *field.metadata, Field(description=field.description))]
        default = ... if field.is_required() else field.get_default(call_default_factory=True)
        fields[field_name] = (ann, default)
    model: type[ArgModelBase] = create_model(f"{name}Arguments", __base__=StrictArguments, **fields)
    return model


def output_schema(result: type[BaseModel]) -> dict[str, Any]:
    """The structured-output schema the SDK derives for a result model (what clients validate against)."""
    return FuncMetadata(arg_model=StrictArguments, output_model=result).output_schema or {}


def make_tool(
    fn: Callable[..., Awaitable[Any]],
    *,
    name: str,
    title: str,
    description: str,
    request: type[BaseModel],
    result: type[BaseModel],
    input_schema: dict[str, Any],
    result_schema: dict[str, Any],
    annotations: ToolAnnotations,
) -> Tool:
    """An SDK tool whose `fn(ctx, **arguments)` returns a `result` instance, published with the given
    (already compacted) input and output schemas; the SDK validates arguments with the flat argument model
    and the return value against `result` before sending it as structured content."""
    meta = TextKeepingMetadata(
        arg_model=argument_model(name, request), output_model=result, output_schema=result_schema
    )
    return Tool(
        fn=fn,
        name=name,
        title=title,
        description=description,
        parameters=input_schema,
        fn_metadata=meta,
        is_async=True,
        context_kwarg="ctx",
        annotations=annotations,
    )


_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains")


def compact_schema(schema: Any, drop: frozenset[str] = frozenset({"title"})) -> Any:
    """The schema without the annotation keywords in `drop` (default: pydantic's `title`, which repeats each
    property's or model's name).

    Only keywords of schema objects are dropped, never a property that happens to share the name (a field
    called `title` or `description` stays); everything a validator reads (types, `$ref`s, `$defs`, enums,
    required, const, formats) is kept.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in drop and key not in _SCHEMA_MAPS:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: compact_schema(v, drop) for k, v in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [compact_schema(v, drop) for v in value]
        elif key in _SCHEMA_ONE:
            out[key] = compact_schema(value, drop)
        else:
            out[key] = value
    return out


# Output schemas serve validation of what the server returns; their prose and defaults repeat the result
# models' docs (docs/reference.md names each result model) and cost hosts context on every tools/list.
OUTPUT_DROP = frozenset({"title", "description", "default", "examples"})


def _refs(node: Any) -> set[str]:
    """Names of the `#/$defs/<name>` references anywhere in a schema fragment."""
    if isinstance(node, dict):
        found = {node["$ref"].rsplit("/", 1)[-1]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*(_refs(v) for v in node)) if node else set()
    return set()


def _closure(defs: dict[str, Any], names: set[str]) -> set[str]:
    """`names` and every definition they reach through references."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo.extend(_refs(defs[name]))
    return seen


def share_definitions(
    schemas: dict[str, dict[str, Any]], groups: list[list[str]], min_chars: int = 1000
) -> None:
    """Publish each large model shared by several output schemas of one group (a toolset) once.

    The first tool of the group (in the given order) keeps the model's full definition; in the others the
    definition becomes `{"$comment": "<Model>: as in the output schema of <tool>"}`, which a validator
    accepts as any value, and definitions nothing reaches any more are dropped. So a toolset of tools that
    all return experiment records carries the record model once, and every tool keeps an output schema that
    still checks its own structure. Changes `schemas` (tool -> {"input", "output"}) in place.
    """
    for group in groups:
        owner: dict[str, str] = {}
        for tool in group:
            out = schemas[tool]["output"]
            defs: dict[str, Any] = out.get("$defs", {})
            for name in sorted(defs):
                size = sum(len(repr(defs[d])) for d in _closure(defs, {name}))
                if size < min_chars:
                    continue
                if name not in owner:
                    owner[name] = tool
                elif owner[name] != tool:
                    defs[name] = {"$comment": f"{name}: as in the output schema of {owner[name]}"}
            if defs:
                root = {k: v for k, v in out.items() if k != "$defs"}
                keep = _closure(defs, _refs(root))
                out["$defs"] = {k: v for k, v in defs.items() if k in keep}


def register_tool(server: MCPServer[Any], tool: Tool) -> None:
    """Add a prebuilt tool to a running server (`MCPServer.add_tool` only takes a function to wrap)."""
    server._tool_manager._tools[tool.name] = tool


def intercept_tool_errors(
    server: MCPServer[Any],
    unknown: Callable[[str], str],
    unexpected: Callable[[str, dict[str, Any], BaseException], str],
) -> None:
    """Replace the SDK's bare answers to a failed call with ones that say what to do.

    The SDK answers a tool it does not serve with `Unknown tool: X`, a crash with `Error executing tool X`
    and nothing else (the cause stays in the server's log), and an argument that fails the flat argument
    model with pydantic's raw text. `unknown(name)` and `unexpected(name, arguments, cause)` write the
    answers instead: which toolset holds the tool and how to enable it; the error's class, the argument it
    concerns and the fix (issues 41, 42). A `ToolError` a tool raised on purpose passes unchanged. Wraps the
    tool manager's `call_tool`, which every call (`MCPServer.call_tool`) goes through.
    """
    manager = server._tool_manager
    original = manager.call_tool

    async def call_tool(
        name: str, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> Any:
        try:
            return await original(name, arguments, context, convert_result=convert_result)
        except UnexpectedToolError as exc:
            cause = _root_cause(exc)
            logger.error("tool %r raised an unexpected exception", name, exc_info=cause)
            raise ToolError(unexpected(name, arguments, cause)) from exc
        except ToolError as exc:
            if manager.get_tool(name) is None:
                raise ToolError(unknown(name)) from exc
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(unexpected(name, arguments, exc.__cause__)) from exc
            raise

    manager.call_tool = call_tool  # type: ignore[method-assign]


def _root_cause(exc: BaseException) -> BaseException:
    """What was raised inside the tool, under the SDK's (possibly nested) `UnexpectedToolError` wrappers."""
    seen = 0
    while isinstance(exc, ToolError) and exc.__cause__ is not None and seen < 16:
        exc, seen = exc.__cause__, seen + 1
    return exc


def make_prompt(
    name: str, description: str, arguments: list[tuple[str, str, bool]], render: Callable[..., str]
) -> Prompt:
    """An SDK prompt whose text is `render(**arguments)`; `arguments` are (name, description, required).

    The SDK's own check of required arguments answers a bare "Internal server error"; this prompt leaves
    checking to `render`, which raises `MCPError(INVALID_PARAMS, ...)` naming the argument and the fix.
    """
    return _RenderedPrompt(
        name=name,
        title=name,
        description=description,
        arguments=[PromptArgument(name=n, description=d, required=r) for n, d, r in arguments],
        fn=render,
    )


class _RenderedPrompt(Prompt):
    async def render(self, arguments: dict[str, Any] | None, context: Any) -> list[Message]:
        return [UserMessage(str(self.fn(**(arguments or {}))))]


async def run_stdio(server: MCPServer[Any]) -> None:
    """Serve over stdio like `MCPServer.run("stdio")`, but advertise `tools.listChanged`, so hosts re-list
    tools after `toolsets_enable` adds some (the SDK's default advertises no list changes), and answer a
    request the SDK cannot read (`AnswerUnreadable`)."""
    from mcp.server.lowlevel import NotificationOptions
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(AnswerUnreadable(read_stream, write_stream), write_stream, options)


def unreadable_reply(item: object) -> SessionMessage | None:
    """A JSON-RPC error answering a request line the SDK could not read, or None (nothing to answer).

    Why: the SDK drops a line that fails its message model (with a debug log), so the client waits for
    ever on that request id; a lone UTF-16 surrogate escape (`"\\ud800"`), which Python's `json` reads but
    the SDK's parser refuses, did that (issue 41). The line is read here with `json` only to find its id.
    """
    if not isinstance(item, ValidationError):
        return None
    errors = item.errors()
    raw = next((e.get("input") for e in errors if isinstance(e.get("input"), str | bytes)), None)
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON at all: there is no id to answer
        return None
    rid = doc.get("id") if isinstance(doc, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, str | int) or "method" not in doc:
        return None
    message = (
        f"kernelpilot could not read request {rid!r}: {errors[0]['msg'][:200]}; fix: send valid JSON whose "
        "strings are UTF-8 text (no lone \\ud800-\\udfff escapes)"
    )
    code = PARSE_ERROR if errors[0]["type"] == "json_invalid" else INVALID_REQUEST
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=rid, error=ErrorData(code=code, message=message)))


class AnswerUnreadable:
    """The transport's read stream, with every request line the SDK could not read answered at once with a
    JSON-RPC error (`unreadable_reply`) instead of being passed on to be dropped. Everything else (the
    stream's `last_context`, closing) is the inner stream's."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _answered(self, item: Any) -> bool:
        reply = unreadable_reply(item)
        if reply is not None:
            await self._write.send(reply)
        return reply is not None

    async def receive(self) -> Any:
        while True:
            item = await self._inner.receive()
            if not await self._answered(item):
                return item

    def __aiter__(self) -> AnswerUnreadable:
        return self

    async def __anext__(self) -> Any:
        while True:
            item = await self._inner.__anext__()
            if not await self._answered(item):
                return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AnswerUnreadable:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self._inner.__aexit__(*exc)
        return result
