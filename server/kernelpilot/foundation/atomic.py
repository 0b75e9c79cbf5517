"""Atomic file writes, the one way kernelpilot writes a file a reader may see: temp file in the same
folder, fsync, then `os.replace` (or a hard link for create-only). A crash leaves the old file or the
new one, never a torn one, and never a stray temp file.

It is also the one place the output-path policy is held (`output_path`): a file is written only over a
regular file or as a new name in an existing folder. A device node, FIFO, socket or directory, a name over
NAME_MAX bytes or a path over PATH_MAX, a link loop or a link whose target folder is missing is refused
with an `OutputPathError` naming the argument, before anything is written: `os.replace` would otherwise
swap `/dev/null` or a FIFO for a regular file. Missing folders are made only when the caller asks
(`mkdir=True`: a command's `--mkdir`, or a folder of kernelpilot's own layout such as a cache).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import OutputPathError

NAME_MAX = 255  # bytes of one path component (Linux, macOS)
PATH_MAX = 4096  # bytes of a whole path (Linux)
_NOT_REGULAR = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_HINT = "give a regular file, or a new file name in an existing folder"


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


def _shown(text: str) -> str:
    return repr(text if len(text) <= 160 else f"{text[:120]}...({len(text):,} characters)")


def _kind(mode: int) -> str:
    return next((name for test, name in _NOT_REGULAR if test(mode)), "not a regular file")


def _check_name(text: str, arg: str) -> None:
    """Refuse what no file system can hold before any system call sees it."""
    if not text or "\0" in text:
        raise OutputPathError(f"{arg} {_shown(text)}: {'empty' if not text else 'holds a NUL byte'}", _HINT)
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise OutputPathError(
            f"{arg} {_shown(text)}: not encodable as a file name ({exc.reason})", _HINT
        ) from None
    if len(raw) > PATH_MAX:
        raise OutputPathError(
            f"{arg} {_shown(text)}: a path of {len(raw):,} bytes (over {PATH_MAX:,})", _HINT
        )
    longest = max(raw.split(b"/"), key=len)
    if len(longest) > NAME_MAX:
        raise OutputPathError(
            f"{arg} {_shown(text)}: a file or folder name of {len(longest):,} bytes (over {NAME_MAX})",
            "use a shorter name",
        )


def output_path(path: str | os.PathLike[str], arg: str = "output file", *, mkdir: bool | None = None) -> Path:
    """The file to write for argument `arg` (named in every error), held to the output-path policy (module
    docstring). A link is followed: its target is what gets written (the temp file beside it). `mkdir`:
    True makes missing folders; False refuses them and says `--mkdir` would make them; None (a command
    without that flag) just refuses them."""
    text = os.fspath(path)
    _check_name(text, arg)
    p = Path(text).expanduser()
    try:
        st: os.stat_result | None = os.stat(p)  # follows links: what a write would reach
    except FileNotFoundError:
        st = None
    except OSError as exc:  # ELOOP (a link loop), ENOTDIR (a file used as a folder), EACCES, ENAMETOOLONG
        raise OutputPathError(f"{arg} {_shown(text)}: cannot be reached ({exc.strerror})", _HINT) from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{arg} {_shown(text)}: is {_kind(st.st_mode)}, not a regular file", _HINT)
    target = Path(os.path.realpath(p))
    folder = target.parent
    if folder.is_dir():
        return target
    if folder.exists() or os.path.lexists(folder):
        raise OutputPathError(f"{arg} {_shown(text)}: {str(folder)!r} is not a folder", _HINT)
    if not mkdir:
        what = f"folder of the link's target {str(target)!r}," if p.is_symlink() else "folder"
        raise OutputPathError(
            f"{arg} {_shown(text)}: {what} {str(folder)!r} does not exist",
            "create the folder first" + (", or pass --mkdir to create it" if mkdir is False else ""),
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputPathError(
            f"{arg}: cannot create folder {str(folder)!r} ({exc.strerror})", _HINT
        ) from None
    return target


def write_temp(path: Path, content: str | Iterable[str], mode: int | None = None) -> Path:
    """Write `content` (text, or chunks streamed in order) to a fsynced temp file beside `path` (whose
    folder must exist: `output_path` checks it, or makes it when asked).

    The file gets `mode`, or by default what `open()` would give a new file (0o666 less the umask): reports,
    SVGs and manifests are user files others may read, not the 0600 of `mkstemp`. The caller moves it into
    place with `os.replace` (or removes it); `write_text_atomic` does both.
    """
    stem = os.fsdecode(os.fsencode(path.name)[:200])  # in bytes: ".<name>.<random>.tmp" stays under NAME_MAX
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{stem}.", suffix=".tmp")
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


def _still_writable(target: Path, arg: str) -> None:
    """Re-checked just before the rename: a FIFO or device put there since `output_path` is not replaced."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise OutputPathError(f"{arg} {_shown(str(target))}: became {_kind(st.st_mode)} while writing", _HINT)


def write_text_atomic(
    path: Path | str,
    content: str | Iterable[str],
    mode: int | None = None,
    *,
    arg: str = "output file",
    mkdir: bool | None = None,
) -> Path:
    """Write `content` to `path` so a reader sees either the old or the new content, never a torn file.

    `path` is held to `output_path` (`arg`, `mkdir` as there); an OS error while writing (no space, no
    permission, a `/proc` folder) is an `OutputPathError` too, and the temp file is gone on every failure.
    `mode`: as `write_temp`. Returns the file written (a link's target).
    """
    target = output_path(path, arg, mkdir=mkdir)
    try:
        tmp = write_temp(target, content, mode)
    except OSError as exc:
        raise OutputPathError(f"{arg} {_shown(str(path))}: cannot write ({exc.strerror})", _HINT) from exc
    try:
        _still_writable(target, arg)
        os.replace(tmp, target)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputPathError(f"{arg} {_shown(str(path))}: cannot write ({exc.strerror})", _HINT) from exc
        raise
    return target


def write_json_atomic(path: Path, data: Any, *, mkdir: bool | None = None) -> None:
    """Indented, key-ordered-as-given JSON with a trailing newline, written atomically."""
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n", mkdir=mkdir)


def create_json_exclusive(path: Path, data: Any, *, mkdir: bool | None = None) -> bool:
    """Write a NEW file atomically; False (nothing written) when `path` already exists.

    The content goes to a temp file first and is hard-linked into place, so two writers racing for
    the same name cannot both succeed and no reader sees a partial file.
    """
    target = output_path(path, mkdir=mkdir)
    tmp = write_temp(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    try:
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
