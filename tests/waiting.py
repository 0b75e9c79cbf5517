"""Waiting in tests without sleeps that guess a duration (AGENTS.md, "Tests").

`wait_until` polls a condition until it holds or a generous deadline passes; the deadline only bounds a
failing test, it is never the thing asserted. This module is the one place tests pause.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest


def wait_until(condition: Callable[[], bool], what: str, timeout_s: float = 30.0) -> None:
    """Return once `condition()` is true; fail the test naming `what` if it is not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    pause = threading.Event()  # never set: wait() is an interruptible pause between polls
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout_s:g} s waiting for {what}")
        pause.wait(0.02)


def process_gone(pid: int) -> bool:
    """True once `pid` no longer runs (a zombie awaiting its reaper counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/status")
    try:
        state = [ln for ln in status.read_text().splitlines() if ln.startswith("State:")]
    except FileNotFoundError:
        return True
    return bool(state) and "Z" in state[0].split()[1]
