"""Fixtures of the experiment-store tests: a throw-away PostgreSQL server, and a store URL per backend.

PostgreSQL: `KERNELPILOT_TEST_PG_URL` (a server you run; each test gets a fresh database in it) or,
when unset, a server started here from the PostgreSQL binaries (`initdb`, `pg_ctl`; Debian package
`postgresql`, found on PATH or under /usr/lib/postgresql/<v>/bin): data dir and unix socket in a temp
dir, listening on 127.0.0.1 only, on a free port, trust auth, stopped and deleted at the end. As root
the server runs as the `postgres` user (else `nobody`) through `runuser`, since postgres refuses root.
No server -> the PostgreSQL tests skip with the reason, except with KERNELPILOT_CI=1, where they fail.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

IN_CI = os.environ.get("KERNELPILOT_CI") == "1"
_counter = itertools.count()


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    for cand in sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True):
        return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PgServer:
    def __init__(self) -> None:
        initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
        if not initdb or not pg_ctl:
            raise RuntimeError("PostgreSQL binaries initdb/pg_ctl not found (apt install postgresql)")
        self.pg_ctl = pg_ctl
        self.dir = Path(tempfile.mkdtemp(prefix="kp-pg-"))
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            user = "postgres"
            try:
                pwd.getpwnam(user)
            except KeyError:
                user = "nobody"
            runuser = shutil.which("runuser")
            if not runuser:
                raise RuntimeError(
                    "running as root and runuser is missing: cannot start postgres as non-root"
                )
            self.prefix = [runuser, "-u", user, "--"]
            shutil.chown(self.dir, user=user)
        self.dir.chmod(0o700)
        self.port = _free_port()
        self.data = self.dir / "data"
        self._run(
            [initdb, "-D", str(self.data), "-A", "trust", "-U", "kp", "-E", "UTF8", "--locale=C", "--no-sync"]
        )
        opts = f"-k {self.dir} -h 127.0.0.1 -p {self.port} -F -c max_connections=60 -c fsync=off"
        self._run(
            [pg_ctl, "-D", str(self.data), "-o", opts, "-l", str(self.dir / "log"), "-w", "-t", "60", "start"]
        )
        self.base = f"postgresql://kp@127.0.0.1:{self.port}"

    def _run(self, argv: list[str]) -> None:
        proc = subprocess.run(
            self.prefix + argv, capture_output=True, text=True, timeout=120, cwd=self.dir, check=False
        )
        if proc.returncode != 0:
            log = self.dir / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(
                f"{Path(argv[0]).name} failed ({proc.returncode}): {proc.stderr[-2000:]} {tail}"
            )

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):
            self._run([self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"])
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_base() -> Iterator[str]:
    """`postgresql://user@host:port` of a server the tests may create databases in."""
    url = os.environ.get("KERNELPILOT_TEST_PG_URL")
    if url:
        yield url.rsplit("/", 1)[0] if url.count("/") > 2 else url
        return
    try:
        import psycopg  # noqa: F401

        server = PgServer()
    except (ImportError, RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
        if IN_CI:
            pytest.fail(f"KERNELPILOT_CI=1 and no PostgreSQL server could be started: {exc}")
        pytest.skip(f"PostgreSQL tests skipped: no server could be started ({exc})")
    try:
        yield server.base
    finally:
        server.stop()


def fresh_pg_db(base: str) -> str:
    import psycopg

    name = f"kp_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return f"{base}/{name}"


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store location for each backend."""
    if request.param == "sqlite":
        return str(tmp_path / "exp.db")
    base = request.getfixturevalue("pg_base")
    return fresh_pg_db(base)


@pytest.fixture
def pg_url(pg_base: str) -> str:
    """A fresh, empty PostgreSQL database."""
    return fresh_pg_db(pg_base)


@pytest.fixture
def second_db_url(request: pytest.FixtureRequest, db_url: str, tmp_path: Path) -> str:
    """Another fresh, empty store of the same backend as `db_url`."""
    if db_url.startswith("postgresql://"):
        return fresh_pg_db(request.getfixturevalue("pg_base"))
    return str(tmp_path / "second.db")


@pytest.fixture(autouse=True)
def _isolated_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Never touch the developer's real store: default location inside the test's temp dir."""
    monkeypatch.delenv("KERNELPILOT_DB", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
