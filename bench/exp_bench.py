"""Experiment-store benchmark: 100,000 records, SQLite (and PostgreSQL when a server can be had).

Measures, through the store API (SQL + JSON decode + pydantic validation of every returned record):
- insert rate in batches of 1,000 records (one transaction each);
- top-20 by score (whole store), and top-5 per operator;
- a filtered list: operator + status + date range, newest 50;
- a text search (two words) newest 50.
Targets (issue 7, SQLite): top-20 <= 20 ms, filtered list <= 50 ms, insert >= 2,000 records/s.

PostgreSQL: `KERNELPILOT_BENCH_PG_URL=postgresql://...` (an empty database you own), else a throw-away
server from the local PostgreSQL binaries (as in the tests), else skipped with the reason printed.
Run: python bench/exp_bench.py [--records N] [--runs R] [--no-pg]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))

from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.record import ExperimentRecord, Status
from kernelpilot.experiments.store import RecordFilter, Store

OPS = [f"op{i:02d}" for i in range(20)]
DTYPES = ["bf16", "fp16", "fp8e4m3", "fp32"]
ARCHS = ["sm_90", "sm_100", "gfx942"]
STATUSES = list(Status)
_WORDS = (
    "tile unroll vectorize swizzle pipeline stages tma multicast split-k persistent warp specialize "
    "prefetch double buffer shared memory register blocking epilogue fusion async copy cluster"
)
WORDS = _WORDS.split(" ")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def make_records(n: int, seed: int = 7) -> list[ExperimentRecord]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        status = rng.choice(STATUSES)
        buggy = status in (Status.crash, Status.incorrect)
        what = " ".join(rng.sample(WORDS, 3))
        out.append(
            ExperimentRecord.model_validate(
                {
                    "id": f"b{i:07d}",
                    "parent_id": f"b{rng.randrange(i):07d}" if i and rng.random() < 0.8 else None,
                    "created": T0 + timedelta(seconds=i * 30, microseconds=rng.randrange(10**6)),
                    "operator": rng.choice(OPS),
                    "dtype": rng.choice(DTYPES),
                    "arch": rng.choice(ARCHS),
                    "gpu": "h100-sxm5",
                    "shapes": {"M": 4096, "N": rng.choice([1024, 4096, 8192]), "K": 4096},
                    "summary": f"{what} - {status.value} run {i}",
                    "description": {"approach": f"try {what}", "why": rng.choice(WORDS) + " limited"},
                    "raw_result": {"median_us": round(rng.uniform(10, 1000), 3)},
                    "score": None if buggy else round(rng.lognormvariate(0, 0.3), 4),
                    "status": status,
                    "is_buggy": buggy,
                    "error_message": "illegal address" if buggy else None,
                    "tags": rng.sample(WORDS, 2),
                }
            )
        )
    return out


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    fn()  # warm caches once
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def summary(name: str, values: list[float], unit: str, higher_better: bool = False) -> str:
    med = statistics.median(values)
    lo, hi = min(values), max(values)
    q = statistics.quantiles(values, n=10) if len(values) >= 10 else [lo] * 9
    return (
        f"{name}={med:.4g} {unit} (median of {len(values)}, spread min {lo:.4g} / p10 {q[0]:.4g} / "
        f"p90 {q[-1]:.4g} / max {hi:.4g})"
    )


def bench_store(label: str, store: Store, records: list[ExperimentRecord], runs: int) -> list[str]:
    lines = []
    batch = 1000
    rates = []
    t_all = time.perf_counter()
    for i in range(0, len(records), batch):
        chunk = records[i : i + batch]
        t = time.perf_counter()
        store.create(chunk)
        rates.append(len(chunk) / (time.perf_counter() - t))
    store.analyze()  # refresh planner statistics after the bulk load, as exp import does
    total_s = time.perf_counter() - t_all
    lines.append(summary(f"{label}_insert_rate", rates, "records/s (per 1,000-record batch)", True))
    lines.append(
        f"{label}_insert_total={len(records) / total_s:.0f} records/s "
        f"({len(records)} records, {total_s:.1f} s)"
    )
    assert store.count(RecordFilter()) == len(records)

    top = timed(lambda: store.top(RecordFilter(), 20), runs)
    lines.append(summary(f"{label}_top20", top, "ms"))
    per_op = timed(lambda: store.top(RecordFilter(), 5, per_operator=True), max(5, runs // 5))
    lines.append(summary(f"{label}_top5_per_operator", per_op, "ms"))
    flt = RecordFilter(
        operator="op07",
        status=[Status.success, Status.regression],
        since=T0 + timedelta(days=3),
        until=T0 + timedelta(days=30),
    )
    got = store.query(flt, limit=50)
    assert got and all(r.operator == "op07" for r in got)
    lst = timed(lambda: store.query(flt, limit=50), runs)
    lines.append(summary(f"{label}_filtered_list50", lst, "ms"))
    txt = timed(lambda: store.query(RecordFilter(text="swizzle multicast"), limit=50), runs)
    lines.append(summary(f"{label}_text_search50", txt, "ms"))
    return lines


def start_pg(tmp: Path) -> tuple[str, Callable[[], None]]:
    import glob
    import pwd
    import socket

    def find(name: str) -> str | None:
        return shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))), None)

    initdb, pg_ctl = find("initdb"), find("pg_ctl")
    if not initdb or not pg_ctl:
        raise RuntimeError("initdb/pg_ctl not found (apt install postgresql)")
    prefix: list[str] = []
    if os.geteuid() == 0:
        user = "postgres"
        try:
            pwd.getpwnam(user)
        except KeyError:
            user = "nobody"
        prefix = ["runuser", "-u", user, "--"]
        shutil.chown(tmp, user=user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tmp / "data"
    run = lambda argv: subprocess.run(prefix + argv, check=True, capture_output=True, timeout=120, cwd=tmp)  # noqa: E731
    run([initdb, "-D", str(data), "-A", "trust", "-U", "kp", "-E", "UTF8", "--locale=C", "--no-sync"])
    run(
        [
            pg_ctl,
            "-D",
            str(data),
            "-o",
            f"-k {tmp} -h 127.0.0.1 -p {port}",
            "-l",
            str(tmp / "log"),
            "-w",
            "start",
        ]
    )
    createdb = find("createdb") or "createdb"
    run([createdb, "-h", "127.0.0.1", "-p", str(port), "-U", "kp", "bench"])

    def stop() -> None:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], capture_output=True, timeout=60
        )
        shutil.rmtree(tmp, ignore_errors=True)

    return f"postgresql://kp@127.0.0.1:{port}/bench", stop


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--no-pg", action="store_true")
    args = ap.parse_args()
    t = time.perf_counter()
    records = make_records(args.records)
    print(f"built {len(records)} records in {time.perf_counter() - t:.1f} s; python {sys.version.split()[0]}")
    lines: list[str] = []
    tmp = Path(tempfile.mkdtemp(prefix="kp-exp-bench-"))
    try:
        if not args.no_pg:
            url = os.environ.get("KERNELPILOT_BENCH_PG_URL")
            stop: Callable[[], None] | None = None
            try:
                if not url:
                    pgdir = Path(
                        tempfile.mkdtemp(prefix="kp-exp-bench-pg-")
                    )  # own dir: postgres must enter it
                    url, stop = start_pg(pgdir)
                store = open_store(url)
                try:
                    lines += bench_store("postgres", store, records, args.runs)
                finally:
                    store.close()
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                print(f"postgres: skipped ({exc})")
            finally:
                if stop:
                    stop()
        store = open_store(str(tmp / "bench.db"))
        try:
            sqlite_lines = bench_store("sqlite", store, records, args.runs)
        finally:
            store.close()
        size_mb = (tmp / "bench.db").stat().st_size / 1e6
        print(f"sqlite file {size_mb:.1f} MB for {len(records)} records")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in lines:
        print(line)
    # SQLite last: the top-20 figure (the headline target) is the final line
    for line in sorted(sqlite_lines, key=lambda s: s.startswith("sqlite_top20=")):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
