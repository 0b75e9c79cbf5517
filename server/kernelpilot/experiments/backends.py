"""Opening the experiment store: the one module that knows both backends, so neither they nor the
protocol in `store` import each other."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kernelpilot.experiments.store import Store, default_data_location, default_location, is_pg_url


def open_store(db: str | None = None, *, busy_timeout_s: float | None = None, upgrade: bool = False) -> Store:
    """Open (creating a fresh one if needed) the store at `db` or the default location; an older SQLite
    schema is migrated only with `upgrade` (`kernelpilot exp upgrade`), after a copy of the file."""
    location = db or default_location()
    if is_pg_url(location):
        from kernelpilot.experiments.pg_store import PostgresStore  # psycopg only when asked for

        return PostgresStore(location, busy_timeout_s=busy_timeout_s)
    from kernelpilot.experiments.sqlite_store import SQLiteStore

    return SQLiteStore(
        Path(location).expanduser(),
        busy_timeout_s=busy_timeout_s,
        upgrade=upgrade,
        make_folder=location == default_data_location(),
    )


@contextmanager
def store_session(db: str | None) -> Iterator[Store]:
    """The store, closed after use; a SQLite file (and folders) this call created is removed again when
    the call fails, so a failed command leaves nothing behind (issue 41: `exp update --db new.db` of a
    missing record left an empty store)."""
    location = db or default_location()
    made = [] if is_pg_url(location) else _missing_chain(Path(location).expanduser())
    store = open_store(location)
    try:
        yield store
    except BaseException:
        store.close()
        _remove_made(made)
        raise
    store.close()


def _missing_chain(path: Path) -> list[Path]:
    """`path` and its missing ancestors (deepest first) when `path` does not exist; [] when it does."""
    out: list[Path] = []
    while not os.path.lexists(path) and path != path.parent:
        out.append(path)
        path = path.parent
    return out


def _remove_made(made: list[Path]) -> None:
    """Remove the store file this call created, its journal files and the folders made for it (if empty)."""
    if not made:
        return
    for side in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):
            Path(str(made[0]) + side).unlink()
    for folder in made[1:]:
        with contextlib.suppress(OSError):  # not empty (someone else wrote there): leave it
            folder.rmdir()
