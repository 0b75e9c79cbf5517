"""Opening the experiment store: the one module that knows both backends, so neither they nor the
protocol in `store` import each other."""

from __future__ import annotations

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
