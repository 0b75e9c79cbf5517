"""What one MCP tool call puts in an agent's context: an answer sized for it, with every row still reachable.

An agent's host holds a tool answer in its context window (Claude Code refuses or cuts answers above ~25,000
tokens by default), and a result model can be megabytes (libcublasLt's resources, a 341-kernel workload
table, every raw ncu metric). So each answer has two parts, each said once:

- text content: the result's `render_text()`, the view the CLI prints, cut at `TEXT_CHARS` at a line end;
- structured content: the result model's JSON with its largest lists and mappings halved, largest first,
  until it fits `STRUCTURED_CHARS`, so the decision fields (totals, verdicts, opportunities, citations,
  the first rows of each table) stay and the long tables shrink to their top rows. A result may name rows
  that go last (`answer_keep()`: top-level list -> rows kept while anything else can shrink; the workload's
  ranked hot set): the halving trims every other field first (issue 42: `workload_read` kept 1 of 55
  kernels while its text showed 20). Two fields are added to
  the published output schema (`answer_model`): `truncated` says what was cut ("kernels: first 20 of 341")
  and `full_result_path` names the full result, written as JSON under `results_dir()`.

Whole answer: at most `ANSWER_CHARS` characters, 8,000 tokens at ~4 characters a token (a rough rule for
English and JSON; no tokenizer is used). `tests/foundation/test_mcp_answer_sizes.py` holds it for every tool.
Generic over result models: nothing here knows a model; a model keeps its top rows first in its lists.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from functools import cache
from pathlib import Path
from typing import Any

from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field, create_model

from kernelpilot.foundation.models import Result

ANSWER_CHARS = 32_000
TEXT_CHARS = 12_000
STRUCTURED_CHARS = 16_000  # at least this much for the structured content, more when the text is short
STRING_CHARS = 2_000  # last resort: a single string longer than this is cut when lists alone do not fit
ROW_STRING_CHARS = 120  # strings in rows a result keeps (`answer_keep`) are cut to this before the rows go
MAX_NOTES = 12
NOTES_CHARS = 2_000  # room kept for `truncated`, `full_result_path` and the text's closing line
KEEP_RESULTS = 200  # newest full results kept in results_dir(); older ones are removed when one is written


def results_dir() -> Path:
    """Where full results go: $KERNELPILOT_MCP_RESULTS, else $XDG_CACHE_HOME/kernelpilot/mcp-results
    (~/.cache/...): a per-user cache, since each file is a copy of an answer the agent can ask for again."""
    override = os.environ.get("KERNELPILOT_MCP_RESULTS")
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernelpilot" / "mcp-results"


@cache
def answer_model(result: type[Result]) -> type[Result]:
    """The result model plus the two fields an answer may carry: the output schema clients validate."""
    model: type[Result] = create_model(
        result.__name__,
        __base__=result,
        __module__=result.__module__,
        truncated=(
            list[str],
            Field(default_factory=list, description="what this answer cut: '<list>: first K of N'"),
        ),
        full_result_path=(str, Field("", description="the full result as JSON when something was cut")),
    )
    return model


_Path = tuple[str | int, ...]


def _size(data: Any) -> int:
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False))


def _pattern(path: _Path) -> str:
    out = ""
    for part in path:
        out += "[]" if isinstance(part, int) else (f".{part}" if out else part)
    return out or "(result)"


class _Digest:
    """Cuts the JSON of one result in place; `cuts` maps a container's path to (kept, total)."""

    def __init__(self, result: BaseModel, data: dict[str, Any]) -> None:
        self.result = result
        self.data = data
        self.cuts: dict[_Path, tuple[int, int]] = {}
        keep = getattr(result, "answer_keep", None)
        self.floors: dict[_Path, int] = {(k,): n for k, n in (keep() if callable(keep) else {}).items()}

    def _walk(self, obj: Any, node: Any, path: _Path, found: list[tuple[int, Any, _Path]]) -> int:
        """Serialized size of `node`; every list and mapping (not a model) under it goes to `found`."""
        if isinstance(obj, BaseModel) and isinstance(node, dict):
            total = 2
            for name, field in type(obj).model_fields.items():
                key = field.alias or name
                if key in node:
                    total += len(key) + 4 + self._walk(getattr(obj, name), node[key], (*path, key), found)
            return total
        if isinstance(obj, list | tuple) and isinstance(node, list):
            pairs = enumerate(zip(obj, node, strict=False))  # the JSON list may be cut shorter already
            total = 2 + sum(self._walk(o, n, (*path, i), found) + 1 for i, (o, n) in pairs)
            found.append((total, node, path))
            return total
        if isinstance(obj, dict) and isinstance(node, dict):
            values = list(obj.values())
            total = 2 + sum(
                len(str(k)) + 4 + self._walk(values[i], v, (*path, str(k)), found)
                for i, (k, v) in enumerate(node.items())
            )
            found.append((total, node, path))
            return total
        return _size(node)

    def _in_kept_row(self, path: _Path) -> bool:
        """A container inside a row a result keeps: trimmed only after everything outside those rows."""
        return any(len(path) > len(kept) and path[: len(kept)] == kept for kept in self.floors)

    def _cut(self, node: Any, path: _Path, keep: int) -> None:
        total = self.cuts.get(path, (len(node), len(node)))[1]
        if isinstance(node, list):
            del node[keep:]
        else:
            for key in list(node)[keep:]:
                del node[key]
        self.cuts[path] = (keep, total)

    def shrink(self, limit: int) -> None:
        """Halve the largest list or mapping until the JSON fits `limit`; strings last. The rows a result
        keeps (`floors`) go last: first everything outside them, then their strings over `ROW_STRING_CHARS`,
        then the lists and mappings inside them, then the rows themselves."""
        rows_shortened = False
        while True:
            found: list[tuple[int, Any, _Path]] = []
            size = self._walk(self.result, self.data, (), found)
            if size <= limit:
                return
            # a list's last row goes only when nothing longer is left to halve (a 1-kernel profile keeps
            # its kernel and loses raw metrics instead); rows a result keeps (`floors`) go after both
            cuttable = [
                f
                for f in found
                if not self._in_kept_row(f[2]) and len(f[1]) > max(1, self.floors.get(f[2], 0))
            ]
            floor = bool(cuttable)
            if not floor and self.floors and not rows_shortened:
                rows_shortened = True
                for path in self.floors:
                    node = self.data.get(str(path[0]))
                    if isinstance(node, list):
                        self._shorten_strings(node, path, ROW_STRING_CHARS)
                continue
            inside = [f for f in found if self._in_kept_row(f[2]) and len(f[1]) > 1]  # a kept row's own lists
            cuttable = (
                cuttable
                or inside
                or [f for f in found if len(f[1]) > 1]
                or [f for f in found if len(f[1]) == 1]
            )
            if not cuttable:
                break
            _, node, path = max(cuttable, key=lambda f: f[0])
            keep = min(len(node) // 2, 64) if len(node) > 1 else 0
            self._cut(node, path, max(keep, self.floors.get(path, 0)) if floor else keep)
        self._shorten_strings(self.data, ())

    def _shorten_strings(self, node: Any, path: _Path, limit: int = STRING_CHARS) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in list(items):
            if isinstance(value, str) and len(value) > limit:
                node[key] = value[:limit] + f"... [cut: {len(value) - limit} more characters]"
                self.cuts[(*path, key)] = (limit, len(value))
            else:
                self._shorten_strings(value, (*path, key), limit)

    def notes(self) -> list[str]:
        """One line per cut list pattern ("kernels: first 20 of 341"), the largest cuts first."""
        grouped: dict[str, list[tuple[int, int]]] = {}
        for path, kept_total in self.cuts.items():
            grouped.setdefault(_pattern(path), []).append(kept_total)
        lines = []
        for pattern, cuts in sorted(grouped.items(), key=lambda g: -sum(t - k for k, t in g[1])):
            if len(cuts) == 1:
                kept, total = cuts[0]
                lines.append(f"{pattern}: first {kept} of {total}")
            else:
                kept, total = sum(k for k, _ in cuts), sum(t for _, t in cuts)
                lines.append(f"{pattern}: first {kept} of {total} in {len(cuts)} lists")
        if len(lines) > MAX_NOTES:
            lines[MAX_NOTES - 1 :] = [f"... and {len(lines) - MAX_NOTES + 1} more cut lists"]
        return lines


def _cut_text(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    head = text[:limit]
    if "\n" in head:
        head = head[: head.rindex("\n")]
    rest = text[len(head) :].count("\n")
    return head + f"\n... {rest} more line(s), {len(text) - len(head):,} characters, not shown", True


def store_full(tool: str, result: Result) -> Path:
    """Write the whole result as JSON under `results_dir()` (the file name says the tool and when), keeping
    the newest `KEEP_RESULTS` files there."""
    from kernelpilot.foundation.atomic import write_text_atomic

    text = result.model_dump_json(indent=1)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
    folder = results_dir()
    path = folder / f"{tool}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-{digest}.json"
    write_text_atomic(path, text + "\n", mkdir=True)  # the per-user results cache folder
    old = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP_RESULTS:]
    for stale in old:
        stale.unlink(missing_ok=True)
    return path


def answer(tool: str, result: Result) -> CallToolResult:
    """The MCP answer for one result: the text view and the digest, each within its budget; the full result
    on disk when either was cut."""
    data = result.model_dump(mode="json", by_alias=True)
    text, text_cut = _cut_text(result.render_text(), TEXT_CHARS)
    digest = _Digest(result, data)
    # what the text leaves of the answer's budget, less room for the cut notes and the path
    digest.shrink(max(STRUCTURED_CHARS, ANSWER_CHARS - len(text) - NOTES_CHARS))
    if digest.cuts or text_cut:
        path = str(store_full(tool, result))
        data["truncated"] = digest.notes() or ["text view: cut (the structured content is whole)"]
        data["full_result_path"] = path
        text += f"\n[answer sized for the context window; every row, as JSON: {path}]"
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)
