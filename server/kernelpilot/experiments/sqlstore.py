"""The store API written once for both SQL backends (SQLite, PostgreSQL), parameterised by the dialect.

A backend subclass supplies the connection (`conn`, a DB-API connection whose `execute` returns a
cursor), its `dialect`, error mapping (`_errors`), write transactions (`_write`), migrations, and the
few hooks where the SQL really differs: id-set lookups, bulk statements, the similar-text query, the
distinct-operator walk and the row lock of an update.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import ValidationError

from kernelpilot.experiments import sqlbuild
from kernelpilot.experiments.errors import DuplicateRecordError, StoreCorruptError
from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.store import Conflict, RecordFilter, record_error, stored_record_problem
from kernelpilot.foundation.errors import InvalidArgumentError, NotFoundError

FROZEN_FIELDS = ("id", "created", "record_version", "updated")
_TAG_INSERT = "INSERT INTO tags (tag, record_id) VALUES ({ph}, {ph})"


def apply_changes(rec: ExperimentRecord, changes: dict[str, Any]) -> ExperimentRecord:
    """The record with `changes` applied, re-validated, `updated` stamped now."""
    bad = [k for k in changes if k in FROZEN_FIELDS]
    if bad:
        raise InvalidArgumentError(f"field {bad[0]!r} cannot be changed by an update", "create a new record")
    unknown = [k for k in changes if k not in ExperimentRecord.model_fields]
    if unknown:
        raise InvalidArgumentError(
            f"unknown record field {unknown[0]!r}", "see exp get --json for field names"
        )
    data = rec.model_dump(mode="json")
    data.update(changes)
    data["updated"] = datetime.now(UTC)
    try:
        return ExperimentRecord.model_validate(data)
    except ValidationError as exc:
        raise record_error(exc, f"update of {rec.id}") from exc


class SQLStore:
    """Queries and record walks shared by the SQL backends; see the module docstring for the hooks."""

    url: str
    conn: Any
    dialect: sqlbuild.Dialect
    # appended to the SELECT that reads a record before an update (PostgreSQL: " FOR UPDATE")
    _lock_for_update = ""

    # ---- backend hooks ----
    def _errors(self, what: str) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _write(self, what: str) -> contextlib.AbstractContextManager[Any]:
        raise NotImplementedError

    def _existing(self, conn: Any, ids: Sequence[str]) -> set[str]:
        """Which of `ids` are already stored (inside the write transaction)."""
        raise NotImplementedError

    def _delete(self, conn: Any, ids: Sequence[str]) -> None:
        """Delete these records and their tags (inside the write transaction)."""
        raise NotImplementedError

    def _executemany(self, conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> None:
        raise NotImplementedError

    def _similar_text(self, tokens: Sequence[str]) -> tuple[str, list[Any]]:
        """SELECT doc, id of records whose summary shares any token; ends with the LIMIT placeholder."""
        raise NotImplementedError

    def _distinct_operators(self, w: str) -> str:
        """SELECT of the distinct operators of the records matching `w` (a WHERE clause or '')."""
        return f"SELECT DISTINCT operator FROM records{w}"

    # ---- shared plumbing ----
    @property
    def skipped(self) -> list[str]:
        """Stored records a read left out because they no longer validate: `<id>: <why>`, one each."""
        if "_skipped" not in self.__dict__:
            self._skipped: list[str] = []
        return self._skipped

    def _parse(self, doc: Any, record_id: Any) -> ExperimentRecord | None:
        """The stored record, or None (noted in `skipped`) when its document no longer validates.

        Why: one record edited by hand or written by a buggy version must not make every list, top,
        similar or export of the others fail (issue 41); the caller that asked for this very record
        (`get`, `update`) turns the None into `StoreCorruptError` naming it.
        """
        try:
            return ExperimentRecord.model_validate_json(doc)
        except (ValidationError, ValueError, TypeError, RecursionError) as exc:
            note = f"{record_id}: {stored_record_problem(exc)}"
            if note not in self.skipped:
                self.skipped.append(note)
            return None

    def _docs(self, sql: str, params: Sequence[Any], what: str) -> list[ExperimentRecord]:
        with self._errors(what):
            rows = self.conn.execute(sql, params).fetchall()
        return [rec for r in rows if (rec := self._parse(r[0], r[1])) is not None]

    def _bad_record(self, record_id: str) -> StoreCorruptError:
        why = next((s for s in self.skipped if s.startswith(f"{record_id}: ")), f"{record_id}: invalid")
        return StoreCorruptError(
            f"stored record {why} (in {self.url})",
            f"export the store (`kernelpilot exp export`; bad records are left out and named), fix or drop "
            f"record {record_id!r} and import the file into a new store",
        )

    def _insert(self, conn: Any, records: Sequence[ExperimentRecord]) -> None:
        ph, time = self.dialect.ph, self.dialect.time
        self._executemany(conn, sqlbuild.insert_sql(ph), [sqlbuild.row(r, time) for r in records])
        self._executemany(conn, _TAG_INSERT.format(ph=ph), [(t, r.id) for r in records for t in r.tags])

    # ---- API ----
    def create(self, records: Sequence[ExperimentRecord], on_conflict: Conflict = "error") -> int:
        if not records:
            return 0
        ids = [r.id for r in records]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise DuplicateRecordError(f"record id {dup!r} appears twice in one batch", "give unique ids")
        with self._write("create") as conn:
            existing = self._existing(conn, ids)
            if existing and on_conflict == "error":
                raise DuplicateRecordError(
                    f"record id {sorted(existing)[0]!r} already exists ({len(existing)} of {len(ids)} do)",
                    "use exp update to change it, or import with --on-conflict skip|replace",
                )
            todo = list(records)
            if on_conflict == "skip":
                todo = [r for r in records if r.id not in existing]
            elif on_conflict == "replace" and existing:
                self._delete(conn, list(existing))
            self._insert(conn, todo)
        return len(todo)

    def get(self, record_id: str) -> ExperimentRecord:
        ph = self.dialect.ph
        with self._errors("get"):
            row = self.conn.execute(f"SELECT doc, id FROM records WHERE id = {ph}", [record_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no experiment record with id {record_id!r} in {self.url}", "see exp list")
        rec = self._parse(row[0], row[1])
        if rec is None:
            raise self._bad_record(record_id)
        return rec

    def update(self, record_id: str, changes: dict[str, Any]) -> ExperimentRecord:
        ph = self.dialect.ph
        with self._write("update") as conn:
            row = conn.execute(
                f"SELECT doc, id FROM records WHERE id = {ph}{self._lock_for_update}", (record_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(
                    f"no experiment record with id {record_id!r} in {self.url}", "see exp list"
                )
            current = self._parse(row[0], row[1])
            if current is None:
                raise self._bad_record(record_id)
            rec = apply_changes(current, changes)
            r = sqlbuild.row(rec, self.dialect.time)
            sets = ", ".join(f"{c} = {ph}" for c in sqlbuild.COLS.split(", ")[1:])
            conn.execute(f"UPDATE records SET {sets} WHERE id = {ph}", (*r[1:], record_id))
            conn.execute(f"DELETE FROM tags WHERE record_id = {ph}", (record_id,))
            self._executemany(conn, _TAG_INSERT.format(ph=ph), [(t, rec.id) for t in rec.tags])
        return rec

    def query(
        self,
        flt: RecordFilter,
        limit: int = 50,
        offset: int = 0,
        order: Literal["newest", "oldest"] = "newest",
    ) -> list[ExperimentRecord]:
        d = self.dialect
        w, params = sqlbuild.where(flt, d)
        direction = "DESC" if order == "newest" else "ASC"
        sql = (
            f"SELECT doc, id FROM records{w} "
            f"ORDER BY created {direction}, {d.id_order} {direction} LIMIT {d.ph} OFFSET {d.ph}"
        )
        return self._docs(sql, [*params, limit, offset], "list")

    def count(self, flt: RecordFilter) -> int:
        w, params = sqlbuild.where(flt, self.dialect)
        with self._errors("count"):
            row = self.conn.execute(f"SELECT COUNT(*) FROM records{w}", params).fetchone()
        return int(row[0]) if row else 0

    def top(self, flt: RecordFilter, n: int, per_operator: bool = False) -> list[ExperimentRecord]:
        d = self.dialect
        w, params = sqlbuild.where(flt, d)
        tc, tparams = sqlbuild.top_clause(d)
        cond = (w + " AND " + tc) if w else (" WHERE " + tc)
        order = f"ORDER BY score DESC, created DESC, {d.id_order} LIMIT {d.ph}"
        if not per_operator:
            return self._docs(f"SELECT doc, id FROM records{cond} {order}", [*params, *tparams, n], "top")
        with self._errors("top"):
            ops = [r[0] for r in self.conn.execute(self._distinct_operators(w), params).fetchall()]
        out: list[ExperimentRecord] = []
        for op in sorted(ops):
            sql = f"SELECT doc, id FROM records{cond} AND operator = {d.ph} {order}"
            out.extend(self._docs(sql, [*params, *tparams, op, n], "top"))
        return out

    def similar_candidates(
        self, operator: str | None, dtype: str | None, arch: str | None, tokens: Sequence[str], limit: int
    ) -> list[ExperimentRecord]:
        ph = self.dialect.ph
        queries: list[tuple[str, list[Any]]] = []
        if operator:
            sql = f"SELECT doc, id FROM records WHERE operator = {ph} ORDER BY created DESC LIMIT {ph}"
            queries.append((sql, [operator]))
        if tokens:
            queries.append(self._similar_text(tokens))
        if dtype or arch:
            conds, ps = [], []
            if dtype:
                conds.append(f"dtype = {ph}")
                ps.append(dtype)
            if arch:
                conds.append(f"arch = {ph}")
                ps.append(arch)
            queries.append(
                (
                    f"SELECT doc, id FROM records WHERE {' AND '.join(conds)} "
                    f"ORDER BY created DESC LIMIT {ph}",
                    ps,
                )
            )
        seen: dict[str, ExperimentRecord] = {}
        for sql, ps in queries:
            for rec in self._docs(sql, [*ps, limit], "similar"):
                seen.setdefault(rec.id, rec)
        return list(seen.values())

    def ancestors(self, record_id: str) -> list[ExperimentRecord]:
        sql = f"SELECT doc, id FROM records WHERE id = {self.dialect.ph}"
        out: list[ExperimentRecord] = []
        seen = {record_id}
        current = self.get(record_id).parent_id
        while current is not None and current not in seen and len(out) < 10000:
            found = self._docs(sql, [current], "lineage")
            if not found:
                break
            seen.add(current)
            out.append(found[0])
            current = found[0].parent_id
        return out

    def descendants(self, record_id: str, max_nodes: int = 10000) -> list[ExperimentRecord]:
        d = self.dialect
        sql = (
            f"WITH RECURSIVE d(id) AS (SELECT id FROM records WHERE parent_id = {d.ph} "
            "UNION SELECT r.id FROM records r JOIN d ON r.parent_id = d.id) "
            f"SELECT doc, id FROM records WHERE id IN (SELECT id FROM d WHERE id <> {d.ph} LIMIT {d.ph}) "
            f"ORDER BY created, {d.id_order}"
        )
        return self._docs(sql, [record_id, record_id, max_nodes], "lineage")

    def iter_all(self) -> Iterator[ExperimentRecord]:
        sql = f"SELECT doc, id FROM records ORDER BY created, {self.dialect.id_order}"
        with self._errors("export"), contextlib.closing(self.conn.execute(sql)) as cur:
            while rows := cur.fetchmany(1000):
                for r in rows:
                    rec = self._parse(r[0], r[1])
                    if rec is not None:
                        yield rec

    def close(self) -> None:
        self.conn.close()
