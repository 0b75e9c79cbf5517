"""`ledger_show`: read a task's append-only `ledger.jsonl` (one eval result per line)."""

from __future__ import annotations

from pathlib import Path

from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.tasks.models import STATUSES, LedgerRequest, LedgerResult
from kernelpilot.tasks.store import read_jsonl


def ledger_show(req: LedgerRequest) -> LedgerResult:
    p = Path(req.task).expanduser()
    path = p / "ledger.jsonl" if p.is_dir() else p
    if req.status is not None and req.status not in STATUSES:
        raise InvalidArgumentError(f"status {req.status!r} is not one of {', '.join(STATUSES)}", "pick one")
    if not path.is_file():
        if p.is_dir() and (p / "task.json").is_file():
            return LedgerResult(ledger=str(path), entries=[], total=0, corrupt_lines=[])
        raise InputFileError(f"no ledger at {path}", "give a task folder (with task.json) or a ledger.jsonl")
    records, bad = read_jsonl(path)
    if req.status is not None:
        records = [r for r in records if r.get("status") == req.status]
    total = len(records)
    if req.last is not None:
        records = records[-req.last :]
    return LedgerResult(ledger=str(path), entries=records, total=total, corrupt_lines=bad)
