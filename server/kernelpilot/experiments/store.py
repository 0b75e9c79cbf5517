"""The store protocol both backends implement, the query filter, typed store errors, and where the
default database lives. It imports neither backend (they import it); `backends.open_store` picks one.

Location, first found wins:
1. the `--db` argument (a file path, or a `postgresql://` / `postgres://` URL);
2. the `KERNELPILOT_DB` environment variable (same forms);
3. the workspace setting: the nearest `kernelpilot.toml` in the current directory or a parent, key
   `db` in table `[experiments]` (a relative path is relative to that file's directory);
4. `$XDG_DATA_HOME/kernelpilot/experiments.db`, or `~/.local/share/kernelpilot/experiments.db`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from kernelpilot.experiments.record import ExperimentRecord, Status, Text, UtcTime
from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InputFileError, InvalidArgumentError
from kernelpilot.foundation.text import plain_error

WORKSPACE_CONFIG = "kernelpilot.toml"
PG_SCHEMES = ("postgresql://", "postgres://")


class RecordFilter(BaseModel):
    """Filters of `list`, `top`, `failures`: all given ones must hold (AND)."""

    model_config = ConfigDict(extra="forbid")

    operator: Text | None = None
    dtype: Text | None = None
    gpu: Text | None = None
    arch: Text | None = None
    status: list[Status] = Field(default_factory=list)
    tag: list[Text] = Field(default_factory=list)
    since: UtcTime | None = None
    until: UtcTime | None = None
    text: Text | None = None
    parent_id: Text | None = None
    buggy: bool | None = None
    min_score: float | None = None


Conflict = Literal["error", "skip", "replace"]


class Store(Protocol):
    """What every backend offers. All writes are transactional: a batch is stored whole or not at all."""

    url: str

    @property
    def skipped(self) -> list[str]:
        """Stored records reads so far left out as invalid (`<id>: <why>`); see `SQLStore._parse`."""
        ...

    def create(self, records: Sequence[ExperimentRecord], on_conflict: Conflict = "error") -> int:
        """Insert records in one transaction; returns how many were written."""
        ...

    def get(self, record_id: str) -> ExperimentRecord:
        """The record with this id, or `NotFoundError`."""
        ...

    def get_many(self, record_ids: Sequence[str]) -> list[ExperimentRecord]:
        """Records with these ids (missing ones are left out), in the order asked."""
        ...

    def update(self, record_id: str, changes: dict[str, Any]) -> ExperimentRecord:
        """Apply field changes atomically, re-validate, stamp `updated`; returns the new record."""
        ...

    def query(
        self,
        flt: RecordFilter,
        limit: int = 50,
        offset: int = 0,
        order: Literal["newest", "oldest"] = "newest",
    ) -> list[ExperimentRecord]: ...

    def count(self, flt: RecordFilter) -> int: ...

    def top(self, flt: RecordFilter, n: int, per_operator: bool = False) -> list[ExperimentRecord]:
        """Best scores first (buggy, crashed and incorrect attempts excluded); per operator: n each."""
        ...

    def similar_candidates(
        self, operator: str | None, dtype: str | None, arch: str | None, tokens: Sequence[str], limit: int
    ) -> list[ExperimentRecord]:
        """Records sharing the operator, dtype or arch, or any summary token: the pool to score."""
        ...

    def ancestors(self, record_id: str) -> list[ExperimentRecord]:
        """Parent, grandparent, ... (nearest first); stops at a missing parent or a cycle."""
        ...

    def descendants(self, record_id: str, max_nodes: int = 10000) -> list[ExperimentRecord]:
        """Every record below this one (children, their children, ...)."""
        ...

    def iter_all(self) -> Iterator[ExperimentRecord]:
        """Every record, oldest first (created, then id)."""
        ...

    def schema_version(self) -> int: ...

    def analyze(self) -> None:
        """Refresh the query planner's statistics (after bulk loads)."""
        ...

    def close(self) -> None: ...


def is_pg_url(db: str) -> bool:
    return db.startswith(PG_SCHEMES)


def _workspace_db(start: Path) -> str | None:
    for folder in (start, *start.parents):
        cfg = folder / WORKSPACE_CONFIG
        if cfg.is_file():
            # the guarded reader: deep nesting or a 5,000-digit number is a typed error, not a traceback
            data = readers.read_toml(cfg, "workspace setting")
            section = data.get("experiments")
            db = section.get("db") if isinstance(section, dict) else None
            if db is None:
                return None
            if not isinstance(db, str) or not db:
                raise InputFileError(
                    f"{cfg}: [experiments] db must be a non-empty string", "set a path or URL"
                )
            if is_pg_url(db) or os.path.isabs(db):
                return db
            return str(folder / db)
    return None


def default_location(cwd: Path | None = None) -> str:
    """Where the store is when `--db` is not given (see the module docstring)."""
    env = os.environ.get("KERNELPILOT_DB")
    if env:
        return env
    ws = _workspace_db(cwd or Path.cwd())
    if ws:
        return ws
    return default_data_location()


def default_data_location() -> str:
    """`$XDG_DATA_HOME/kernelpilot/experiments.db` (or under ~/.local/share): the one store location whose
    missing folders kernelpilot creates; a `--db`, KERNELPILOT_DB or workspace path must name an existing
    folder (issue 41: no folder is made that the user did not ask for)."""
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return str(base / "kernelpilot" / "experiments.db")


def busy_timeout_default() -> float:
    """Seconds a writer waits for a lock: `KERNELPILOT_DB_BUSY_TIMEOUT_S`, default 30."""
    raw = os.environ.get("KERNELPILOT_DB_BUSY_TIMEOUT_S", "30")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value < 0:
        raise InputFileError(
            f"KERNELPILOT_DB_BUSY_TIMEOUT_S={raw!r} is not a number of seconds >= 0", "unset it or fix it"
        )
    return value


def iso(ts: datetime) -> str:
    """Sortable UTC text of a time, as stored in SQLite columns."""
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def text_tokens(text: str) -> list[str]:
    """Lower-case word tokens (letters/digits), for text search and similarity."""
    out: list[str] = []
    word: list[str] = []
    for ch in text.lower():
        if ch.isalnum():
            word.append(ch)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


_UNION_TAGS = frozenset({"int", "str", "float", "bool", "none", "list", "dict"})


def record_error(exc: ValidationError, where: str) -> InvalidArgumentError:
    """A record validation failure as a typed error naming each bad field (dotted path)."""
    by_loc: dict[str, list[str]] = {}
    for err in exc.errors():
        # drop pydantic's union-branch tags ("int", "list[int]", "function-after[...]") from the path
        parts = [str(p) for p in err["loc"] if not (isinstance(p, str) and (p in _UNION_TAGS or "[" in p))]
        msg = plain_error(err)
        by_loc.setdefault(".".join(parts) or "record", []).append(msg)
    text = "; ".join(f"{loc}: {' or '.join(dict.fromkeys(msgs))}" for loc, msgs in by_loc.items())
    return InvalidArgumentError(f"invalid experiment record ({where}): {text}", "fix the named field")


def stored_record_problem(exc: Exception) -> str:
    """Why a stored document is not a valid record, in one line (the first few fields named)."""
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        parts = []
        for err in errs[:3]:
            loc = ".".join(str(p) for p in err["loc"] if not (isinstance(p, str) and p in _UNION_TAGS))
            parts.append(f"{loc or 'document'}: {plain_error(err)}")
        more = f" (+{len(errs) - 3} more)" if len(errs) > 3 else ""
        return "invalid record (" + "; ".join(parts) + more + ")"
    if isinstance(exc, RecursionError):
        return "invalid record (nested too deeply)"
    return f"invalid record ({type(exc).__name__}: {str(exc)[:200]})"
