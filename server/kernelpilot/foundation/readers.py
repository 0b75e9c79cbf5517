"""Guarded readers, one per format family (JSON, JSONL, TOML, CSV): how a file a user can edit is read.

Why: the standard parsers accept inputs that crash later, far from the file (issue 34): 10,000-level nesting
(RecursionError), 5,000-digit integers (ValueError at `int()`), NaN/Infinity and 1e999 (a float that is not
finite), lone surrogates (`"\\ud800"` parses, then fails at the first UTF-8 write), a directory, FIFO,
`/dev/zero` or a symlink loop where a file was expected. Every reader here checks the file kind and size,
decodes UTF-8 (a leading BOM dropped), bounds nesting depth and number length, refuses non-finite numbers
unless the caller allows them, and refuses lone surrogates, with a `ReaderError` naming the file, the place
(line and column, or the JSON path) and the fix.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import FormatError, InputFileError

MAX_DEPTH = 64  # kernelpilot files nest ~8 levels; far below the recursion limit
MAX_NUMBER_CHARS = 64  # digits of a number literal (a 64-bit int has 20; a double needs at most ~25)
MAX_FILE_BYTES = 64 * 2**20  # task, memory, spec, ledger, result and export files (traces pass their own)
_BOM = b"\xef\xbb\xbf"
_BAD_ESCAPE = re.compile(r"\\u(?:[dD][89a-fA-F][0-9a-fA-F]{2}|0000)")  # a surrogate or NUL, escaped
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


class ReaderError(FormatError):
    """A file (or one line, cell or value of it) that a guarded reader refuses; names the file and place."""

    kind = "input_format"

    def __init__(self, message: str, hint: str = "", *, file: str = "", place: str = "") -> None:
        super().__init__(message, hint)
        self.file = file
        self.place = place


def _fail(source: str, place: str, what: str, hint: str) -> ReaderError:
    where = f"{source}:{place}" if place else source
    sep = " " if what.startswith("is ") else ": "
    return ReaderError(f"{where}{sep}{what}", hint, file=source, place=place)


# ---- the file: kind, size, bytes, text ----


def read_bytes(path: Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most `max_bytes`; anything else is a typed error naming it."""
    try:
        st = os.stat(path)  # follows links: a loop or a dangling link fails here
    except FileNotFoundError as exc:
        raise InputFileError(f"{what} {path} not found", "check the path") from exc
    except OSError as exc:  # ELOOP (symlink loop), ENAMETOOLONG, EACCES on a folder on the way
        raise InputFileError(f"cannot read {what} {path}: {exc.strerror}", "give the path of a file") from exc
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise InputFileError(f"{what} {path} is {kind}", "give the path of a regular file")
    if st.st_size > max_bytes:
        raise ReaderError(
            f"{what} {path} is {st.st_size:,} bytes, over the {max_bytes:,}-byte limit for this file",
            "give the file kernelpilot wrote (it is far smaller); split or trim a hand-made one",
            file=str(path),
        )
    try:
        with open(path, "rb") as fh:
            # the size the stat saw, then whatever was appended since (never a `max_bytes` buffer up front)
            data = fh.read(st.st_size)
            while len(data) <= max_bytes and (more := fh.read(2**20)):
                data += more
    except OSError as exc:
        raise InputFileError(f"cannot read {what} {path}: {exc.strerror}", "check permissions") from exc
    if len(data) > max_bytes:  # grew since the stat
        raise ReaderError(f"{what} {path} grew past {max_bytes:,} bytes while read", "read it again")
    return data


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text without a leading BOM; a bad byte is named by line and column."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _fail(
            source,
            f"{line}:{col}",
            f"not UTF-8 text (byte 0x{data[exc.start]:02x})",
            "save the file as UTF-8",
        ) from exc


def read_text(path: Path, what: str = "file", max_bytes: int = MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text (BOM dropped), with the limits of `read_bytes`."""
    return decode_utf8(read_bytes(path, what, max_bytes), str(path))


# ---- JSON ----


def _line_col(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    return f"{line}:{pos - (text.rfind(chr(10), 0, pos) + 1) + 1}"


def check_depth(text: str, source: str, max_depth: int = MAX_DEPTH, line_offset: int = 0) -> None:
    """Refuse JSON/TOML text nested deeper than `max_depth` (brackets inside strings not counted)."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    brackets = _NOT_BRACKET.sub("", _STRING.sub('""', text))
    depth = 0
    for ch in brackets:
        depth += 1 if ch in "[{" else -1
        if depth > max_depth:
            raise _fail(
                source,
                f"line {line_offset + 1}" if line_offset else "",
                f"nested more than {max_depth} levels deep",
                "kernelpilot files nest a few levels: give the file as the tool wrote it",
            )


@dataclass(frozen=True)
class _Hooks:
    source: str
    allow_nonfinite: bool
    max_number_chars: int

    def parse_int(self, s: str) -> int:
        if len(s.lstrip("-")) > self.max_number_chars:
            raise _NumberError(f"an integer of {len(s)} digits (more than {self.max_number_chars})")
        return int(s)

    def parse_float(self, s: str) -> float:
        if len(s) > self.max_number_chars:
            raise _NumberError(f"a number literal of {len(s)} characters (more than {self.max_number_chars})")
        v = float(s)
        if not math.isfinite(v) and not self.allow_nonfinite:
            raise _NumberError(f"the number {s[:30]} overflows a double (inf)")
        return v

    def parse_constant(self, s: str) -> float:
        if not self.allow_nonfinite:
            raise _NumberError(f"{s} is not a JSON number")
        return float(s)


class _NumberError(ValueError):
    """Raised inside the json hooks; `loads_json` turns it into a `ReaderError` with the place."""


def _path_str(path: list[str | int]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


def find_surrogate(value: Any, path: list[str | int] | None = None) -> str | None:
    """The JSON path of the first string (or key) holding a lone surrogate or a NUL (which no file name,
    argument or stored text may hold), None when there is none."""
    path = path or []
    if isinstance(value, str):
        return None if _encodes(value) else _path_str(path)
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and not _encodes(k):
                return _path_str([*path, k.encode("utf-8", "backslashreplace").decode()])
            found = find_surrogate(v, [*path, k])
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = find_surrogate(v, [*path, i])
            if found:
                return found
    return None


def _encodes(s: str) -> bool:
    if "\x00" in s:
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def loads_json(
    text: str,
    source: str,
    *,
    allow_nonfinite: bool = False,
    max_depth: int = MAX_DEPTH,
    max_number_chars: int = MAX_NUMBER_CHARS,
    line: int = 0,
    hint: str = "restore the file, or fix it at the place named",
) -> Any:
    """Parse JSON text with the limits: depth, number length, finite numbers, no lone surrogates.

    `line`, when given, is the line of a JSONL file the text came from (places then read `file:line`).
    """
    check_depth(text, source, max_depth, line)
    hooks = _Hooks(source, allow_nonfinite, max_number_chars)
    try:
        value = json.loads(
            text,
            parse_int=hooks.parse_int,
            parse_float=hooks.parse_float,
            parse_constant=hooks.parse_constant,
        )
    except json.JSONDecodeError as exc:
        place = str(line or exc.lineno)
        raise _fail(
            source, place, f"is not JSON (not valid JSON at column {exc.colno}: {exc.msg})", hint
        ) from exc
    except _NumberError as exc:
        raise _fail(source, str(line) if line else "", str(exc), hint) from exc
    except RecursionError as exc:  # the depth check bounds it; a guard for a caller that raised the limit
        raise _fail(source, str(line) if line else "", "nested too deeply", hint) from exc
    if _BAD_ESCAPE.search(text):
        where = find_surrogate(value)
        if where:
            place = f"{line} {where}" if line else where
            raise _fail(
                source, place, "a string holds a NUL or a lone UTF-16 surrogate (\\ud800-\\udfff)", hint
            )
    return value


def read_json(path: Path, what: str = "JSON file", *, max_bytes: int = MAX_FILE_BYTES, **limits: Any) -> Any:
    """A JSON file read with every guard (file kind and size, UTF-8, depth, numbers, surrogates)."""
    return loads_json(read_text(path, what, max_bytes), str(path), **limits)


def iter_jsonl(
    text: str, source: str, *, allow_nonfinite: bool = False, hint: str = "one JSON object per line"
) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; lines split at `\\n` only (U+2028 may sit in a string)."""
    for n, raw in enumerate(text.split("\n"), 1):
        if raw.strip():
            yield n, loads_json(raw, source, allow_nonfinite=allow_nonfinite, line=n, hint=hint)


# ---- TOML ----


def _check_toml_values(value: Any, source: str, path: list[str | int], allow_nonfinite: bool) -> None:
    if isinstance(value, float) and not allow_nonfinite and not math.isfinite(value):
        raise _fail(source, _path_str(path), f"{value} is not a finite number", "give a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        raise _fail(source, _path_str(path), "an integer wider than 64 bits", "give a smaller number")
    if isinstance(value, dict):
        for k, v in value.items():
            _check_toml_values(v, source, [*path, k], allow_nonfinite)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _check_toml_values(v, source, [*path, i], allow_nonfinite)


def loads_toml(text: str, source: str, *, allow_nonfinite: bool = False) -> dict[str, Any]:
    """Parse TOML with the limits (depth, 64-bit integers, finite floats unless allowed)."""
    import tomllib

    check_depth(text, source)
    hint = "fix the TOML at the place named"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise _fail(source, "", f"not valid TOML: {exc}", hint) from exc
    except ValueError as exc:  # an integer past Python's digit limit (tomllib calls int() on it)
        raise _fail(source, "", f"a number too long to read ({str(exc)[:80]})", hint) from exc
    except RecursionError as exc:
        raise _fail(source, "", "nested too deeply", hint) from exc
    _check_toml_values(data, source, [], allow_nonfinite)
    where = find_surrogate(data)
    if where:  # tomllib refuses surrogate escapes; a guard should that change
        raise _fail(source, where, "a string holds a lone UTF-16 surrogate", hint)
    return data


def read_toml(path: Path, what: str = "TOML file", **limits: Any) -> dict[str, Any]:
    return loads_toml(read_text(path, what), str(path), **limits)


# ---- CSV ----

DELIMITERS = {",": "comma", ";": "semicolon", "\t": "tab"}


@dataclass(frozen=True)
class CsvTable:
    """A CSV table found below any banner lines: its header, rows as dicts, and the file line of each row."""

    header: list[str]
    rows: list[dict[str, str]]
    lines: list[int]
    delimiter: str


def _header_cells(line: str, delimiter: str) -> list[str]:
    return [c.strip().strip('"').strip() for c in next(csv.reader([line], delimiter=delimiter))]


def find_header(lines: list[str], need: tuple[str, ...], source: str) -> tuple[int, str]:
    """(index, delimiter) of the first line naming every column in `need` as a whole cell."""
    for i, ln in enumerate(lines[:200]):
        for delim in DELIMITERS:
            if delim in ln or len(need) == 1:
                try:
                    cells = set(_header_cells(ln, delim))
                except csv.Error:
                    continue
                if all(n in cells for n in need):
                    return i, delim
    for i, ln in enumerate(lines[:200]):
        for delim in DELIMITERS:
            try:
                cells = set(_header_cells(ln, delim))
            except csv.Error:
                continue
            have = [n for n in need if n in cells]
            if have and len(cells) > 1:
                missing = [n for n in need if n not in cells]
                raise _fail(
                    source,
                    str(i + 1),
                    f"the header lacks column(s) {', '.join(repr(m) for m in missing)}",
                    "give the tool's CSV as written (columns renamed or dropped?)",
                )
    raise _fail(
        source,
        "",
        f"no header line naming {', '.join(repr(n) for n in need)} "
        f"(delimiters tried: {', '.join(DELIMITERS.values())})",
        "give the tool's CSV as written",
    )


def read_csv_table(text: str, source: str, need: tuple[str, ...]) -> CsvTable:
    """Rows of the CSV table whose header names `need`: BOM dropped, `\\r\\n`/`\\r`/`\\n` line ends,
    the delimiter (comma, semicolon, tab) detected from that header; a ragged row is named by its line."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines()
    start, delim = find_header(lines, need, source)
    try:
        parsed = list(csv.reader(io.StringIO("\n".join(lines[start:])), delimiter=delim))
    except csv.Error as exc:
        raise _fail(source, "", f"broken CSV: {exc}", "record the file again") from exc
    header = [c.strip().strip('"').strip() for c in parsed[0]]
    rows: list[dict[str, str]] = []
    where: list[int] = []
    for k, cells in enumerate(parsed[1:], start=start + 2):
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue
        if len(cells) != len(header):
            raise _fail(
                source,
                str(k),
                f"a row of {len(cells)} cells under a header of {len(header)} (truncated?)",
                "record the file again and let the tool finish writing",
            )
        rows.append(dict(zip(header, cells, strict=True)))
        where.append(k)
    return CsvTable(header, rows, where, delim)


def finite(value: Any, source: str, place: str, what: str, *, minimum: float | None = 0.0) -> float:
    """A cell or field as a finite float (at least `minimum` unless None); else a typed error naming it."""
    if isinstance(value, bool):
        raise _fail(source, place, f"{what} = {value!r} is not a number", "record the file again")
    if isinstance(value, str):
        cell = value.replace(",", "").strip()
        if len(cell) > MAX_NUMBER_CHARS:
            raise _fail(source, place, f"{what} is a {len(cell)}-character number", "record the file again")
        try:
            value = float(cell)
        except ValueError as exc:
            raise _fail(source, place, f"{what} = {cell[:40]!r} is not a number", "record it again") from exc
    if not isinstance(value, (int, float)):
        raise _fail(source, place, f"{what} = {str(value)[:40]!r} is not a number", "record it again")
    try:
        v = float(value)
    except OverflowError as exc:
        raise _fail(source, place, f"{what} overflows a double", "record the file again") from exc
    if not math.isfinite(v):
        raise _fail(source, place, f"{what} = {v} is not a finite number", "record the file again")
    if minimum is not None and v < minimum:
        raise _fail(
            source, place, f"{what} = {v:g} is below {minimum:g}: it cannot be true", "record it again"
        )
    return v


def count(value: Any, source: str, place: str, what: str) -> int:
    """A non-negative whole number that fits 64 bits (a count, a timestamp in ns, a grid size)."""
    v = finite(value, source, place, what)
    if v >= 2.0**63 or v != int(v):
        raise _fail(
            source, place, f"{what} = {v:g} is not a whole number below 2^63", "record the file again"
        )
    return int(v)
