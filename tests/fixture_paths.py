"""Build-machine paths in tests/fixtures: the check, the scrubber, and the files allowed to keep them.

A fixture recorded on a device or a developer's machine carries that machine's absolute paths: home
folders (`/root/out/...`), temporary build folders (`/tmp/kp/...`, `mkdtemp` names), the engineers' work
folders (`/work/main/...`, `/work/devreq/...`) and user-named workspaces. They say nothing a test needs and
name the machine and its user, so text fixtures hold neutral placeholders instead (`SCRUB`: `<home>/`,
`<tmp>/`, `<repo>/`, `<work>/`), and a fixture that must keep its bytes is listed in `ALLOWED` with why.
`tests/profile/test_profile_ncu.py::test_no_device_paths_leak` holds every fixture to this.

Scrub a text fixture (gzip-compressed text too) after recording it:

    python tests/fixture_paths.py FILE...        # rewrites each FILE in place, prints what changed
"""

from __future__ import annotations

import fnmatch
import gzip
import re
import sys
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# an absolute path into a home folder, a temporary folder, a work folder or a user-named workspace, or a
# relative one climbing out of the checkout into them (`../../work/<worktree>/`); not one inside a URL or a
# longer word (`https://x.org/work/`, `a/tmp/b`, `~/tmp/`)
_PLACES = rb"(?:root|home/[^/\s\"',]+|Users/[^/\s\"',]+|tmp|var/tmp|work|sgl-workspace)/"
LEAK = re.compile(rb"(?:(?<![A-Za-z0-9_.~/:-])/|(?<![A-Za-z0-9_.~/:-])(?:\.\./){2,})" + _PLACES)

# prefix -> placeholder, most specific first; the rest of each path (the file's own name) is kept
SCRUB: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_.~/:-])/work/main/"), "<repo>/"),
    (re.compile(r"(?<![A-Za-z0-9_.~/:-])(?:/|(?:\.\./){2,})work/"), "<work>/"),
    (re.compile(r"(?<![A-Za-z0-9_.~/:-])/(?:root|home/[^/\s\"',]+|Users/[^/\s\"',]+)/"), "<home>/"),
    (re.compile(r"(?<![A-Za-z0-9_.~/:-])/(?:var/)?tmp/"), "<tmp>/"),
)

_SCRIPT = (
    "a capture script as it ran on the device: its scratch folder is part of the recorded command (the "
    "script creates and empties it), and a placeholder would not run"
)
_CUBIN = (
    "compiled code: the compiler wrote the source file's path into the line table and debug strings; "
    "`isa` readers and the disassembler read the exact bytes"
)
_THIRD_PARTY = (
    "a public third-party capture (jhinpan/flydsl-kernel-profiling, Apache-2.0) kept unchanged as copied "
    "(its PROVENANCE.md); the paths are its author's, already published"
)

# fixture path pattern (relative to tests/fixtures, fnmatch: `*` crosses folders) -> why it keeps its paths
ALLOWED: dict[str, str] = {
    "profile/ncu/capture.sh": _SCRIPT,
    "profile/ncu/bench2.sh": _SCRIPT,
    "profile/ncu/checks3.sh": _SCRIPT,
    "profile/rootcause/run.sh": _SCRIPT,
    "suggest/elementwise_h100/src/stopsig.sh": _SCRIPT,
    "roofline/issue_bound/*.cubin": _CUBIN,
    "isa/triton/cache/*.cubin": _CUBIN + " (Triton's cache entries, read as Triton wrote them)",
    "profile/rootcause/isa/rc_kernels.cubin": _CUBIN,
    "suggest/elementwise_h100/cubin/*.cubin": _CUBIN,
    "workload/join/gpu/triton/*.cubin": _CUBIN + " (the Triton cubins the join test reads)",
    "profile/ncu/vector_add.ncu-rep": (
        "an Nsight Compute report (binary): the import test reads it with ncu, which checks its bytes"
    ),
    "profile/rocprofv3/small_results.json": _THIRD_PARTY,
    "profile/att/*": _THIRD_PARTY + "; the ATT reader maps code lines to sources through them",
}


def _allowed(rel: str, allowed: dict[str, str]) -> bool:
    return any(fnmatch.fnmatchcase(rel, pattern) for pattern in allowed)


def _content(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".gz":
        return gzip.decompress(data)
    return data


def leaks(root: Path = FIXTURES, allowed: dict[str, str] | None = None) -> list[str]:
    """'<file>: <first path>' for every file under `root` (gzip read through) holding a build-machine
    path that `allowed` does not list."""
    allowed = ALLOWED if allowed is None else allowed
    out = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if _allowed(rel, allowed):
            continue
        data = _content(path)
        m = LEAK.search(data)
        if m:
            shown = re.match(rb'[^\s"]+', data[m.start() : m.start() + 80])
            assert shown is not None  # the match starts with '/'
            out.append(f"{rel}: {shown.group(0).decode('utf-8', 'replace')}")
    return out


def scrub_text(text: str) -> str:
    for pattern, placeholder in SCRUB:
        text = pattern.sub(placeholder, text)
    return text


def scrub_file(path: Path) -> bool:
    """Rewrite `path` (text, or gzip-compressed text) with placeholders; True when it changed."""
    raw = _content(path)
    text = raw.decode("utf-8")
    new = scrub_text(text)
    if new == text:
        return False
    data = new.encode("utf-8")
    if path.suffix == ".gz":
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)
    return True


def main(argv: list[str]) -> int:
    for name in argv:
        if scrub_file(Path(name)):
            print(f"scrubbed {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
