"""A runner process seen from the judge: started, messaged under a deadline, stopped between batches with
every process it started, drained of its output, and reaped with all of them.

- **Stopped between batches.** SIGSTOP goes to the runner's process group and to every process that
  descends from it, found by walking /proc's parent links (a child that called setsid() is still a
  descendant). The judge is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so a double-forked process is
  re-parented to the judge rather than to init: a process whose side cannot be told is stopped whenever any
  side is. The judge waits until each one reads stopped before it touches the arena.
- **Output.** stdout and stderr are pipes drained by two threads into bounded tails (`TAIL_BYTES`), so a
  runner that floods its output fills no disk and blocks on nothing; the tails go into a failure's evidence.
- **The end.** SIGKILL to the group and every descendant, then reaped (a zombie would keep its pid).
"""

from __future__ import annotations

import contextlib
import ctypes
import getpass
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from typing import Any

from kernelpilot.judge.arena import Arena
from kernelpilot.runner import wire

PR_SET_CHILD_SUBREAPER = 36
TAIL_BYTES = 16_384
STOP_WAIT_S = 2.0
RUNNERS: set[int] = set()  # every runner pid of this judge: an orphan is none of them
NICE = os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0
CORES = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()


def become_subreaper() -> None:
    if sys.platform == "linux":
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _stat(pid: int | str) -> list[bytes] | None:
    """/proc/<pid>/stat's fields after the command name (state, parent, group, ...); None when gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:  # exited while listed
        return None
    return raw[raw.rfind(b")") + 2 :].split()


def _state(pid: int) -> str:
    """The state letter /proc shows for `pid` ("" when it is gone)."""
    rest = _stat(pid)
    return rest[0].decode() if rest else ""


def process_table() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, state letter) of every process /proc shows."""
    table: dict[int, tuple[int, int, str]] = {}
    for name in os.listdir("/proc"):
        rest = _stat(name) if name.isdigit() else None
        if rest:
            table[int(name)] = (int(rest[1]), int(rest[2]), rest[0].decode())
    return table


class Tail:
    """The last `TAIL_BYTES` a pipe carried, drained by a daemon thread."""

    def __init__(self, stream: Any) -> None:
        self.chunks: deque[bytes] = deque()
        self.size = 0
        self.total = 0
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream: Any) -> None:
        fd = stream.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the pipe went away with the process
                return
            if not chunk:
                return
            self.total += len(chunk)
            self.chunks.append(chunk)
            self.size += len(chunk)
            while self.size > TAIL_BYTES and len(self.chunks) > 1:
                self.size -= len(self.chunks.popleft())

    def text(self, limit: int = 1200) -> str:
        data = b"".join(self.chunks)[-limit:]
        return data.decode("utf-8", "replace")


class RunnerExit(Exception):
    """The runner missed a deadline, exited or broke the protocol; `status` is timeout or failed."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class Side:
    """One side's runner process and its arena."""

    def __init__(
        self, name: str, env: dict[str, str], timeout_s: float, preload: tuple[str, ...] = ()
    ) -> None:
        self.name, self.timeout_s = name, timeout_s
        self.tmp = tempfile.mkdtemp(prefix=f"kernelpilot-runner-{name}-")
        env = {**env, **private_env(self.tmp, env)}
        self.arena = Arena(name)
        self.arena.ensure(1 << 16)
        cmd_r, self.cmd = os.pipe()
        self.reply, rep_w = os.pipe()
        argv = [sys.executable, "-m", "kernelpilot.runner", "--cmd-fd", str(cmd_r), "--reply-fd", str(rep_w),
                "--arena-fd", str(self.arena.fd), "--arena-bytes", str(self.arena.size),
                *[f"--preload={m}" for m in preload]]  # fmt: skip
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            pass_fds=(cmd_r, rep_w, self.arena.fd), start_new_session=True,
        )  # fmt: skip
        os.close(cmd_r)
        os.close(rep_w)
        self.pid = self.proc.pid
        RUNNERS.add(self.pid)
        self.out, self.err = Tail(self.proc.stdout), Tail(self.proc.stderr)
        self.stopped: list[int] = []
        self.seen: set[int] = {self.pid}
        self.sandbox = ""

    # ---- messages ----

    def ask(self, msg: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        """Send one message and wait for the reply (the runner must be running)."""
        limit = timeout_s if timeout_s is not None else self.timeout_s
        try:
            wire.send(self.cmd, msg)
            got = wire.recv(self.reply, time.monotonic() + limit)
        except (wire.WireError, BrokenPipeError) as exc:
            timeout = isinstance(exc, wire.WireError) and exc.timeout
            self.kill()
            raise RunnerExit(
                "timeout" if timeout else "failed",
                (f"the {self.name} runner did not answer within {limit:g} s" if timeout
                 else f"the {self.name} runner exited ({self._exit_text()})") + self.last_lines(),
            ) from exc  # fmt: skip
        if not isinstance(got, dict):
            self.kill()
            raise RunnerExit("failed", f"the {self.name} runner sent {type(got).__name__}, not a reply")
        return got

    def _exit_text(self) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=2.0)
        rc = self.proc.returncode
        if rc is None:
            return "still running, pipe closed"
        return f"killed by signal {-rc}" if rc < 0 else f"exit code {rc}"

    def last_lines(self) -> str:
        for t in (self.out, self.err):
            t.thread.join(timeout=0.5)
        parts = []
        if self.err.total:
            parts.append(f"stderr ({self.err.total} bytes), last lines:\n{self.err.text()}")
        if self.out.total:
            parts.append(f"stdout ({self.out.total} bytes), last lines:\n{self.out.text(600)}")
        return ("\n" + "\n".join(parts)) if parts else ""

    # ---- stopping and resuming ----

    def members(self, table: dict[int, tuple[int, int, str]]) -> list[int]:
        """The runner and every process descending from it or in its group, and every orphan re-parented to
        the judge (stopped with any side; resumed only with the side it was seen under: `cont`)."""
        me = os.getpid()
        others = RUNNERS - {self.pid}
        kids: dict[int, list[int]] = {}
        for pid, (ppid, _, _) in table.items():
            kids.setdefault(ppid, []).append(pid)
        found, todo = set(), [self.pid]
        todo += [p for p, (_, pgid, _) in table.items() if pgid == self.pid]
        while todo:
            pid = todo.pop()
            if pid in found or pid not in table or pid == me or pid in others:
                continue
            found.add(pid)
            todo.extend(kids.get(pid, []))
        self.seen |= found  # this side's own: resumed with it
        orphans = {p for p, (ppid, _, _) in table.items() if ppid == me and p not in RUNNERS}
        return sorted(found | orphans)

    def freeze(self, wait: bool = False) -> None:
        """SIGSTOP to the runner and its process group at once (no /proc walk: `stop` finds every other
        descendant); `wait`: until the runner reads stopped, before the judge writes its next values."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGSTOP)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGSTOP)
        if wait:
            deadline = time.monotonic() + STOP_WAIT_S
            while time.monotonic() < deadline and _state(self.pid) not in ("T", "t", "Z", "X", ""):
                time.sleep(0.00005)

    def thaw(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGCONT)

    def stop(self) -> None:
        table = process_table()
        self.stopped = self.members(table)
        for pid in self.stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
        deadline = time.monotonic() + STOP_WAIT_S
        pending = set(self.stopped)
        while pending and time.monotonic() < deadline:
            table = process_table()
            pending = {p for p in pending if p in table and table[p][2] not in ("T", "t", "Z", "X")}
            if pending:
                time.sleep(0.0002)

    def cont(self, group_only: bool = False) -> None:
        """Resume the side's own processes at the judge's priority and on its cores (a candidate may renice
        or re-pin the other side's processes while it runs: undone before each batch). An orphan never seen
        as this side's descendant stays stopped: it could belong to the other side; `group_only` (a timed
        batch): so does every process that left the runner's process group."""
        table = process_table() if group_only else {}
        own = [
            p
            for p in self.stopped
            if p in self.seen and (not group_only or table.get(p, (0, 0))[1] == self.pid)
        ]
        for pid in own or [self.pid]:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, pid, NICE)
                os.sched_setaffinity(pid, CORES)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGCONT)

    def kill(self) -> None:
        table = process_table()
        doomed = (set(self.members(table)) | (self.seen & set(table))) - (RUNNERS - {self.pid})
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        for pid in doomed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        reap_orphans()
        RUNNERS.discard(self.pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            wire.send(self.cmd, {"op": "exit"})
        self.kill()
        for fd in (self.cmd, self.reply):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.arena.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def private_env(tmp: str, env: dict[str, str]) -> dict[str, str]:
    """The runner's own temporary folder (the only temporary folder its sandbox lets it write), with
    torch's compile cache kept where it would be without it, so compiled kernels persist across evals; and
    OpenMP's idle threads sleeping instead of spinning (unless the task sets a policy): frozen and thawed
    around every call, spinning workers made a 0.75 ms CPU GEMM read 1-15 ms a call, passive ones 2.0 ms
    +- 5 % (the same on both sides: the ratio is what the verdict uses)."""
    user = env.get("USER") or getpass.getuser()
    cache = env.get("TORCHINDUCTOR_CACHE_DIR") or os.path.join(tempfile.gettempdir(), f"torchinductor_{user}")
    return {
        "TMPDIR": tmp,
        "TORCHINDUCTOR_CACHE_DIR": cache,
        "OMP_WAIT_POLICY": env.get("OMP_WAIT_POLICY", "PASSIVE"),
    }


def reap_orphans() -> None:
    """Collect the exit status of dead re-parented processes (the judge is their subreaper); runners are
    left to their `Popen`."""
    me = os.getpid()
    for pid, (ppid, _, state) in process_table().items():
        if ppid == me and state == "Z" and pid not in RUNNERS:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
