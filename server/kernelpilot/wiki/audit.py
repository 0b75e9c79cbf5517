"""Audit of citations written in a workspace's Markdown/JSON files against the loaded wikis.

A citation is `<metric>: <value> <unit> <- <path>:L<line>` where `<path>` starts with a wiki root's
folder name (`gpu-wiki-index/...` for the bundled wiki, a user wiki's own folder name otherwise).
In JSON files the same text is found inside strings (`\\"` is read as `"`).

Definitions (each citation gets exactly one verdict):
- ok: the cited file and line exist and that line is a spec line stating the cited metric with the
  cited value (numerically equal) and unit.
- dangling: the citation cannot be followed to its metric: the wiki root or file does not exist, the
  line number is past the end of the file, or the cited line does not state the cited metric (prose,
  blank, another metric - e.g. the line moved). When the metric is found on another line of the file
  the report names that line.
- stale: the cited line states the cited metric but with another value or unit, and the cited value
  was that metric's value in an earlier committed version of the wiki file (its git history, when the
  wiki is in a git checkout and `git` is available). The wiki changed since the citation was written.
- forged: the cited line states the cited metric but with another value or unit, and the cited value
  never was that metric's value in any version known (the current file and, when available, its git
  history). The number was edited or invented after it was looked up. A cited number that is not finite
  (`1e999`, `inf`, `nan`), has more than `MAX_DIGITS` digits or underflows to 0 is forged whatever the line
  says: no wiki line states it, and `inf` would otherwise compare equal to anything within a relative
  tolerance.

A cited path is followed only strictly inside a loaded wiki root (`Wiki.escapes_roots`: an absolute path
after the prefix, `..`, a link out): otherwise dangling, and nothing outside the wikis is read.
`CITATION_RE` runs in linear time on any line: a metric is tried only where a run of `[a-z0-9_]` starts
(`bench/audit_long_lines.py`: a 1 MB line of any shape in well under 1 s; `tests/wiki/test_audit_hostile.py`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernelpilot.foundation import readers
from kernelpilot.foundation.errors import InputFileError, ToolchainError
from kernelpilot.wiki.core import Wiki, load_wiki, parse_spec_line
from kernelpilot.wiki.models import AuditProblem, AuditResult

CITATION_RE = re.compile(
    # a metric starts a run of [a-z0-9_] (leading digits/underscores skipped, as the unanchored pattern
    # did): anchoring the start keeps the scan linear (unanchored, a 60,000-character run took 13 s)
    r"(?<![a-z0-9_])[0-9_]*(?P<metric>[a-z][a-z0-9_]*): "
    r'(?P<value>"[^"\n]*"|[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:inf(?:inity)?|nan)) '
    r"(?P<unit>[A-Za-z/]+) <- (?P<path>[^\s:`\"'<>|()\[\]]+):L(?P<line>\d+)"
)
SCAN_SUFFIXES = (".md", ".json")
MAX_DIGITS = 40  # a wiki value has a few significant digits; a 400-digit "number" is not one
Kind = Literal["forged", "stale", "dangling"]
_SKIP_DIRS = {".git", ".venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache"}


@dataclass
class Citation:
    metric: str
    value_text: str
    unit: str
    path: str
    line: int
    location: str
    text: str


def _value_of(text: str) -> float | str:
    return text[1:-1] if text.startswith('"') else float(text)


def _same_value(a: float | str, b: float | str) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    if not (math.isfinite(a) and math.isfinite(b)):
        return False  # finite numbers only: inf <= 1e-9 * inf would call inf equal to any number
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def absurd_value(text: str) -> str | None:
    """Why a cited number can be no wiki value (not finite, too many digits, underflows to 0), or None."""
    if text.startswith('"'):
        return None
    mantissa = re.split("[eE]", text, maxsplit=1)[0]
    digits = sum(ch.isdigit() for ch in mantissa)
    if digits > MAX_DIGITS:
        return f"a number of {digits:,} digits"
    value = float(text)
    if not math.isfinite(value):
        return "not a finite number (beyond the float range)"
    if value == 0.0 and mantissa.strip("+-0.") != "":
        return "a number below the float range (it reads as 0)"
    return None


def find_citations(text: str, rel: str, is_json: bool) -> list[Citation]:
    """Every citation in a file's text, with `<rel>:L<line>` locations."""
    out: list[Citation] = []
    if "<- " not in text:
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "<- " not in line:
            continue
        if is_json:
            line = line.replace('\\"', '"')
        for m in CITATION_RE.finditer(line):
            out.append(
                Citation(
                    m["metric"],
                    m["value"],
                    m["unit"],
                    m["path"],
                    int(m["line"]) if len(m["line"]) <= 12 else 0,  # 0: past any file's end (dangling)
                    f"{rel}:L{lineno}",
                    line[m.start("metric") : m.end()],
                )
            )
    return out


def _iter_files(paths: list[Path]) -> list[tuple[Path, str]]:
    files: list[tuple[Path, str]] = []
    for p in paths:
        if not p.exists():
            raise InputFileError(f"audit path {str(p)!r} does not exist", "give a workspace folder or file")
        if not p.is_file() and not p.is_dir():  # a FIFO would hang the read; a device never ends
            raise InputFileError(
                f"audit path {str(p)!r} is not a regular file or folder", "give a workspace folder or file"
            )
        if p.is_file():
            files.append((p, p.name))
            continue
        for f in sorted(p.rglob("*")):
            if f.suffix in SCAN_SUFFIXES and f.is_file():
                rel = f.relative_to(p)
                if any(part in _SKIP_DIRS for part in rel.parts):
                    continue
                files.append((f, rel.as_posix()))
    return files


class _WikiFiles:
    """Cache of cited wiki files (by path on disk): lines, parsed spec lines, git history values."""

    def __init__(self, wiki: Wiki, history: bool) -> None:
        self.wiki = wiki
        self.history = history
        self._lines: dict[Path, list[str]] = {}
        self._by_metric: dict[Path, dict[str, list[tuple[int, float | str, str]]]] = {}
        self._past: dict[Path, set[tuple[str, str, str]] | None] = {}
        self._disks: dict[str, list[Path]] = {}

    def disks(self, cited: str) -> list[Path]:
        if cited not in self._disks:
            self._disks[cited] = self.wiki.resolve_cited_files(cited)
        return self._disks[cited]

    def lines(self, disk: Path) -> list[str]:
        if disk not in self._lines:
            self._lines[disk] = disk.read_text(encoding="utf-8").splitlines()
        return self._lines[disk]

    def metric_lines(self, disk: Path, metric: str) -> list[tuple[int, float | str, str]]:
        if disk not in self._by_metric:
            table: dict[str, list[tuple[int, float | str, str]]] = {}
            for i, ln in enumerate(self.lines(disk), start=1):
                parsed = parse_spec_line(ln)
                if parsed is not None and not isinstance(parsed, str):
                    table.setdefault(parsed.key, []).append((i, parsed.value, parsed.unit))
            self._by_metric[disk] = table
        return self._by_metric[disk].get(metric, [])

    def past_values(self, disk: Path) -> set[tuple[str, str, str]] | None:
        """(metric, value repr, unit) of spec lines in the file's git history; None if unknown."""
        if not self.history:
            return None
        if disk not in self._past:
            self._past[disk] = self._git_history(disk)
        return self._past[disk]

    @staticmethod
    def _git_history(disk: Path) -> set[tuple[str, str, str]] | None:
        from kernelpilot.host.toolchain import find_tool, run

        git = find_tool("git")
        if git is None:
            return None
        try:
            res = run(
                [str(git), "-C", str(disk.parent), "log", "--format=", "-p", "--follow", "--", disk.name],
                timeout_s=30,
                check=False,
            )
        except ToolchainError:
            return None
        if res.returncode != 0:
            return None
        out: set[tuple[str, str, str]] = set()
        for ln in res.stdout.splitlines():
            if ln.startswith(("-- ", "+- ")):
                parsed = parse_spec_line(ln[1:])
                if parsed is not None and not isinstance(parsed, str):
                    out.add((parsed.key, repr(parsed.value), parsed.unit))
        return out


def _check(c: Citation, files: _WikiFiles) -> AuditProblem | None:
    """Verdict for one citation; with several wiki roots of the same folder name, ok if any file agrees."""
    absurd = absurd_value(c.value_text)
    if absurd is not None:  # judged before any file is opened: no wiki line can state it
        return AuditProblem(
            kind="forged",
            location=c.location,
            citation=c.text,
            reason=f"the cited value {c.value_text[:40]}{'...' if len(c.value_text) > 40 else ''} is "
            f"{absurd}: no wiki line states it",
            fix="replace the number with the cited line's value (copy the citation from `kernelpilot spec`)",
        )
    if files.wiki.escapes_roots(c.path):
        return AuditProblem(
            kind="dangling",
            location=c.location,
            citation=c.text,
            reason=f"cited path {c.path[:200]} leaves the wiki root (an absolute path, '..' or a link out): "
            "not read",
            fix="cite a file inside a loaded wiki, as `kernelpilot spec` prints it",
        )
    disks = files.disks(c.path)
    if not disks:
        return _check_one(c, files, None)
    first: AuditProblem | None = None
    for disk in disks:
        p = _check_one(c, files, disk)
        if p is None:
            return None
        first = first or p
    return first


def _check_one(c: Citation, files: _WikiFiles, disk: Path | None) -> AuditProblem | None:
    lines = files.lines(disk) if disk is not None else None
    cited_value = _value_of(c.value_text)

    def problem(kind: Kind, reason: str, fix: str, current: str | None = None) -> AuditProblem:
        return AuditProblem(
            kind=kind,
            location=c.location,
            citation=c.text,
            reason=reason,
            fix=fix,
            current=current,
        )

    if lines is None or disk is None:
        roots = ", ".join(files.wiki.root_names()) or "none"
        return problem(
            "dangling",
            f"cited file {c.path} is not in any loaded wiki (roots: {roots})",
            "cite a file of a loaded wiki (pass the user wiki with --wiki) or re-look the value up with "
            "`kernelpilot spec`",
        )
    elsewhere = files.metric_lines(disk, c.metric)
    current = None
    if elsewhere:
        i, v, u = elsewhere[0]
        shown = f'"{v}"' if isinstance(v, str) else f"{v:g}"
        current = f"{c.metric}: {shown} {u} <- {c.path}:L{i}"
    if c.line < 1 or c.line > len(lines):
        return problem(
            "dangling",
            f"{c.path} has {len(lines)} lines; L{c.line} does not exist",
            "re-cite from `kernelpilot spec`"
            + (f" (the metric is now at L{elsewhere[0][0]})" if elsewhere else ""),
            current,
        )
    parsed = parse_spec_line(lines[c.line - 1])
    if parsed is None or isinstance(parsed, str) or parsed.key != c.metric:
        held = (
            f"holds {parsed.key}"
            if parsed is not None and not isinstance(parsed, str)
            else "is not a spec line"
        )
        where = (
            f"; {c.metric} is at L{', L'.join(str(e[0]) for e in elsewhere)}"
            if elsewhere
            else f"; {c.metric} is not in that file"
        )
        return problem(
            "dangling",
            f"{c.path}:L{c.line} {held}{where}",
            "update the line number from `kernelpilot spec` (and check the value)",
            current,
        )
    if _same_value(parsed.value, cited_value) and parsed.unit == c.unit:
        return None
    shown_now = f"{parsed.value_text} {parsed.unit}"
    now = f"{c.metric}: {parsed.value_text} {parsed.unit} <- {c.path}:L{c.line}"
    past = files.past_values(disk)
    if past is not None and (c.metric, repr(cited_value), c.unit) in past:
        return problem(
            "stale",
            f"{c.path}:L{c.line} now states {shown_now}; the cited {c.value_text} {c.unit} is an earlier "
            "version of that line (git history)",
            "re-cite the current value and re-check what depended on the old one",
            now,
        )
    hist = "" if past is not None else " (no git history available to check earlier versions)"
    return problem(
        "forged",
        f"{c.path}:L{c.line} states {shown_now}, not {c.value_text} {c.unit}; the cited value was never "
        f"on that line{hist}",
        "replace the number with the cited line's value (copy the citation from `kernelpilot spec`)",
        now,
    )


def audit_paths(paths: list[Path], wiki: Wiki | None = None, *, history: bool = True) -> AuditResult:
    """Check every citation in the .md/.json files under `paths` (see the module docstring)."""
    if wiki is None:
        wiki = load_wiki()
    files = _WikiFiles(wiki, history)
    problems: list[AuditProblem] = []
    checked = 0
    scanned = _iter_files([Path(p) for p in paths])
    for f, rel in scanned:
        text = readers.read_text(f, "audited file")  # regular files only, size-capped, UTF-8 (typed errors)
        for c in find_citations(text, rel, f.suffix == ".json"):
            checked += 1
            p = _check(c, files)
            if p is not None:
                problems.append(p)
    return AuditResult(
        ok=not problems,
        files_scanned=len(scanned),
        citations_checked=checked,
        citations_ok=checked - len(problems),
        problems=problems,
    )
