"""Test-only core functions for the MCP robustness tests (imported by dotted path, like `_slowcap`)."""

import threading

from kernelpilot.experiments.api import ExpGetRequest, RecordResult

RELEASE = threading.Event()  # set by the test to let blocked calls end
ENDED: list[int] = []  # one entry per blocked call that has ended (list.append is thread-safe)


def crash_on_path(request: ExpGetRequest) -> RecordResult:
    """Fails the way an unguarded open of the `db` argument would (no kernelpilot error)."""
    raise PermissionError(13, "Permission denied", request.db)


def crash_plain(request: ExpGetRequest) -> RecordResult:
    """A bug that names nothing: a KeyError deep in a core function."""
    return {}["missing"]  # type: ignore[no-any-return]


def block(request: ExpGetRequest) -> RecordResult:
    """Blocks until the test releases it, like a read of a FIFO nobody writes."""
    try:
        RELEASE.wait()
    finally:
        ENDED.append(1)
    raise AssertionError("a blocked call is never answered: the server cancelled it")
