"""What a runner closes before the candidate's code loads: reaching the judge's and the other side's
processes.

- `PR_SET_DUMPABLE 0`: other processes of the same user cannot ptrace this one or open its
  `/proc/<pid>/mem`, `fd/` or `environ` (the other side's runner cannot read or write this side's memory or
  its shared arena).
- A Landlock domain (Linux >= 5.13; unprivileged, inherited by every child): a process inside it cannot
  ptrace, or open the `/proc/<pid>/mem` of, a process outside it — the judge, the eval process, the other
  side's runner — even as root; from Landlock ABI 6 (Linux 6.12) it cannot signal them either (no
  SIGSTOP/SIGKILL of the judge or of the baseline's runner). File access stays as it was: the rule set
  handles only the creation of block devices. Where Landlock is missing the note says so and the judge
  records it (docs/guard.md, "Threat model").
"""

from __future__ import annotations

import ctypes
import os
import platform

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
# x86_64 and aarch64 share the Landlock syscall numbers (added together in 5.13).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
LANDLOCK_SCOPE_SIGNAL = 1 << 1


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


def landlock() -> str:
    """Enter a Landlock domain; what was applied, or why nothing was."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return f"no Landlock on {platform.system()} {platform.machine()}"
    libc = _libc()
    abi = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    if abi < 1:
        return f"Landlock unavailable ({os.strerror(ctypes.get_errno())})"
    attr = _Attr(LANDLOCK_ACCESS_FS_MAKE_BLOCK, 0, LANDLOCK_SCOPE_SIGNAL if abi >= 6 else 0)
    size = 24 if abi >= 6 else 8
    fd = libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if fd < 0:
        return f"Landlock ruleset refused ({os.strerror(ctypes.get_errno())})"
    try:
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"no_new_privs refused ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, fd, 0) != 0:
            return f"Landlock restrict_self refused ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(fd)
    scoped = "ptrace and signals" if abi >= 6 else "ptrace"
    return f"Landlock ABI {abi}: {scoped} scoped to the runner's own processes"


def enter() -> str:
    not_dumpable()
    return landlock()
