"""Typed errors of the experiment store (SQLite and PostgreSQL back ends raise the same kinds)."""

from __future__ import annotations

from kernelpilot.foundation.errors import StoreError


class StoreCorruptError(StoreError):
    """The database file is not a (readable) kernelpilot experiment store."""

    kind = "store_corrupt"


class StoreLockedError(StoreError):
    """Another process holds the database lock longer than the busy timeout."""

    kind = "store_locked"


class StoreVersionError(StoreError):
    """The store was written by a newer kernelpilot (unknown schema version)."""

    kind = "store_version"


class StoreConnectionError(StoreError):
    """The PostgreSQL server cannot be reached or refused the connection."""

    kind = "store_connection"


class DuplicateRecordError(StoreError):
    """A record with this id already exists."""

    kind = "duplicate_record"
