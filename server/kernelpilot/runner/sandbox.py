"""What a runner closes before the candidate's code loads: reaching the judge's and the other side's
processes.

- `PR_SET_DUMPABLE 0`: other processes of the same user cannot ptrace this one or open its
  `/proc/<pid>/mem`, `fd/` or `environ` (the other side's runner cannot read or write this side's memory or
  its shared arena).
- A Landlock domain (Linux >= 5.13; unprivileged, inherited by every child): a process inside it cannot
  ptrace, or open the `/proc/<pid>/mem` of, a process outside it — the judge, the eval process, the other
  side's runner — even as root; from Landlock ABI 6 (Linux 6.12) it cannot signal them either (no
  SIGSTOP/SIGKILL of the judge or of the baseline's runner). **Writes** are allowed only beneath the
  runner's own temporary folder (TMPDIR, made by the judge for this run), /dev, the user's caches
  (~/.cache, ~/.triton, ~/.nv and the cache variables torch, Triton and XDG name), the entries of the
  runner's root other than `.kernelpilot` and `.git`, and the folders `KERNELPILOT_RUNNER_WRITABLE` lists:
  the task's files, the baseline tree, the experiment database, the installed packages and kernelpilot's
  own source cannot be written (reads are unchanged) unless they lie beneath one of those folders, which
  the note then says. Where Landlock is missing the note says so and the judge records it (docs/guard.md,
  "Threat model").
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
from pathlib import Path

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
# x86_64 and aarch64 share the Landlock syscall numbers (added together in 5.13).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
# The write rights (Landlock ABI 1; REFER from ABI 2, TRUNCATE from ABI 3); reads, execution and device
# ioctls are not handled, so they stay as they were.
WRITE_ABI1 = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # write_file, remove_*, make_*
FILE_RIGHTS = (1 << 1) | (1 << 14)  # write_file, truncate: the rights a rule on a file (not a folder) takes
REFER, TRUNCATE = 1 << 13, 1 << 14
LANDLOCK_SCOPE_SIGNAL = 1 << 1
WRITABLE_ENV = "KERNELPILOT_RUNNER_WRITABLE"
CACHE_ENV = ("XDG_CACHE_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR",
             "CUDA_CACHE_PATH", "TMPDIR")  # fmt: skip


class _Attr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def not_dumpable() -> None:
    """No ptrace or /proc access to this process by its peers (also used by the judge on itself)."""
    if platform.system() == "Linux":
        _libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


class _Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def writable_roots(root: Path) -> list[Path]:
    """Where the candidate's process may write: temporary folders, /dev, caches, its root's own entries."""
    import tempfile

    home = Path(os.environ.get("HOME", "/nonexistent"))
    found = [Path(tempfile.gettempdir()), Path("/dev")]  # TMPDIR: the runner's own, made by the judge
    found += [home / ".cache", home / ".triton", home / ".nv"]
    found += [Path(os.environ[k]) for k in CACHE_ENV if os.environ.get(k)]
    found += [Path(p) for p in os.environ.get(WRITABLE_ENV, "").split(os.pathsep) if p]
    with contextlib.suppress(OSError):  # an unreadable root: nothing of it is writable
        found += [e for e in root.iterdir() if e.name not in (".kernelpilot", ".git")]
    return [p for p in found if p.exists()]


def _add_rules(libc: ctypes.CDLL, ruleset: int, handled: int, roots: list[Path]) -> None:
    for path in roots:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:  # vanished or unreadable: no rule
            continue
        try:
            rights = handled if path.is_dir() else handled & FILE_RIGHTS
            rule = _Beneath(rights, fd)
            libc.syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        finally:
            os.close(fd)


def landlock(root: Path) -> str:
    """Enter a Landlock domain; what was applied, or why nothing was."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"no Landlock on {platform.system()} {platform.machine()}"
    libc = _libc()
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return f"Landlock unavailable ({os.strerror(ctypes.get_errno())})"
    handled = WRITE_ABI1 | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    attr = _Attr(handled, 0, LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 8
    fd = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if fd < 0:
        return f"Landlock ruleset refused ({os.strerror(ctypes.get_errno())})"
    roots = writable_roots(root)
    try:
        _add_rules(libc, fd, handled, roots)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            return f"Landlock restrict_self refused ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(fd)
    scoped = "ptrace and signals" if abi >= 6 else "ptrace"
    task = root / ".kernelpilot"
    under = [str(r) for r in roots if r.is_dir() and task.resolve().is_relative_to(r.resolve())]
    if under:
        return (
            f"Landlock ABI {abi}: {scoped} scoped; the task folder lies beneath writable {under[0]}: its "
            "files are guarded by the tamper check alone"
        )
    return (
        f"Landlock ABI {abi}: {scoped} scoped to the runner's own processes; writes only beneath "
        f"{len(roots)} folders (temporary, /dev, caches, the root's own entries)"
    )


def enter(root: Path) -> str:
    not_dumpable()
    return landlock(root)
