"""Atomic file writes, the one way kernelpilot writes a file a reader may see: temp file in the same
folder, fsync, then `os.replace` (or a hard link for create-only). A crash leaves the old file or the
new one, never a torn one, and never a stray temp file.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def _umask() -> int:
    """The process umask, read without changing it where Linux says it (/proc/self/status); elsewhere set
    and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass  # not Linux (or no /proc): fall back to setting and restoring it
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_temp(path: Path, content: str | Iterable[str], mode: int | None = None) -> Path:
    """Write `content` (text, or chunks streamed in order) to a fsynced temp file beside `path`.

    The file gets `mode`, or by default what `open()` would give a new file (0o666 less the umask): reports,
    SVGs and manifests are user files others may read, not the 0600 of `mkstemp`. The caller moves it into
    place with `os.replace` (or removes it); `write_text_atomic` does both.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_umask() if mode is None else mode)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            if isinstance(content, str):
                fh.write(content)
            else:
                for chunk in content:
                    fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def write_text_atomic(path: Path, content: str | Iterable[str], mode: int | None = None) -> None:
    """Write `content` to `path` so a reader sees either the old or the new content, never a torn file
    (`mode`: as `write_temp`)."""
    tmp = write_temp(path, content, mode)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json_atomic(path: Path, data: Any) -> None:
    """Indented, key-ordered-as-given JSON with a trailing newline, written atomically."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def create_json_exclusive(path: Path, data: Any) -> bool:
    """Write a NEW file atomically; False (nothing written) when `path` already exists.

    The content goes to a temp file first and is hard-linked into place, so two writers racing for
    the same name cannot both succeed and no reader sees a partial file.
    """
    tmp = write_temp(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
