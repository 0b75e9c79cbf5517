"""Files a task owns, written so that a crash never leaves a partial one.

`atomic_write_text` writes a temp file in the same folder, fsyncs it and `os.replace`s it over the
target. `append_jsonl` appends one line under an exclusive `fcntl.flock` with a single `write`
(and repairs a torn last line left by a writer killed mid-line by starting on a new line).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kernelpilot.errors import FormatError, InputFileError, StoreError
from kernelpilot.models import compact_json


def write_temp(path: Path, text: str) -> Path:
    """Write text to a fsynced temp file beside `path`; the caller os.replace()s it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    tmp = write_temp(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: Path, data: Any) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise InputFileError(f"{what} {path} not found", "check the path")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{what} {path} is not valid JSON: {exc}", "restore or recreate it") from exc


def append_jsonl(path: Path, record: dict[str, Any]) -> None:
    """Append one JSON line atomically with respect to other kernelpilot writers (flock + one write)."""
    line = (compact_json(record) + "\n").encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open ledger {path}: {exc}", "check permissions") from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        size = os.fstat(fd).st_size
        if size > 0:
            with open(path, "rb") as fh:
                fh.seek(size - 1)
                if fh.read(1) != b"\n":
                    line = b"\n" + line  # a torn line from a killed writer stays alone on its line
        written = os.write(fd, line)
        if written != len(line):
            raise StoreError(f"short write to ledger {path}", "check free disk space")
        os.fsync(fd)
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_jsonl(path: Path) -> tuple[list[dict[str, Any]], list[int]]:
    """Records of a JSONL file and the 1-based numbers of lines that are not JSON objects."""
    records: list[dict[str, Any]] = []
    bad: list[int] = []
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            if not raw.strip():
                continue
            try:
                obj = json.loads(raw)
            except json.JSONDecodeError:
                bad.append(n)
                continue
            if isinstance(obj, dict):
                records.append(obj)
            else:
                bad.append(n)
    return records, bad
