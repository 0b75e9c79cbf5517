"""The experiment database: every optimization attempt recorded, failures first.

Owns the record model (`record.py`), the store protocol and its two backends (SQLite by default,
PostgreSQL for a shared team history: `store.py`, `sqlite_store.py`, `pg_store.py`, sharing the
queries of `sqlstore.py` / `sqlbuild.py`), similarity
scoring (`similarity.py`), eval-result ingestion (`ingest.py`), text renderings (`render.py`) and the
core functions behind `kernelpilot exp ...` / the `exp_*` MCP tools (`ops.py`).

It does not own the eval result format (`result.json`, `kernelpilot.tasks.models.EvalRecord`) nor the
bottleneck verdict (`kernelpilot.bottleneck.models.BottleneckVerdict`): it stores snapshots of them.
"""
