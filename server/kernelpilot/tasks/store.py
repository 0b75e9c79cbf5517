"""Files a task owns, written so that a crash never leaves a partial one.

Whole files go through `kernelpilot.foundation.atomic` (temp file, fsync, `os.replace`). `append_jsonl`
appends one line under an exclusive `fcntl.flock` with a single `write`
(and repairs a torn last line left by a writer killed mid-line by starting on a new line).
"""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernelpilot.foundation import readers
from kernelpilot.foundation.atomic import write_text_atomic
from kernelpilot.foundation.errors import InputFileError, StoreError
from kernelpilot.foundation.models import compact_json

if TYPE_CHECKING:
    from kernelpilot.tasks.models import Task


def atomic_write_json(path: Path, data: Any) -> None:
    """Task files are key-sorted JSON (stable diffs), written atomically."""
    write_text_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def read_json(path: Path, what: str) -> Any:
    """A task file through the guarded JSON reader (file kind, size, depth, numbers, surrogates)."""
    return readers.read_json(path, what, hint="restore or recreate it")


def read_task(task_json: Path) -> Task:
    """A validated task.json: the one reader of `tasks.evaluate.load_task` and `guard.timed` (the contract
    task's timing factory), so both refuse the same files with the same error."""
    from pydantic import ValidationError

    from kernelpilot.tasks.models import Task

    try:
        return Task.model_validate(read_json(task_json, "task file"))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"]) or "<root>"
        raise InputFileError(
            f"{task_json} is not a valid task.json: field {field!r}: {err['msg']}",
            "fix that field (`kernelpilot task create` enforces the same ranges) or recreate the task",
        ) from exc


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
    text = readers.read_bytes(path, "ledger").decode("utf-8", errors="replace")
    for n, raw in enumerate(text.split("\n"), 1):
        if not raw.strip():
            continue
        try:
            obj = readers.loads_json(raw, str(path), line=n)
        except readers.ReaderError:  # a torn or hand-broken line is counted, the rest still read
            bad.append(n)
            continue
        if isinstance(obj, dict):
            records.append(obj)
        else:
            bad.append(n)
    return records, bad
