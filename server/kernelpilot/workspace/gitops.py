"""Git operations of a workspace, all through `kernelpilot.host.toolchain` (argv lists, timeouts, typed
errors).

Identity and signing are set locally in each workspace repo so commits work on a bare machine with
no global git configuration.
"""

from __future__ import annotations

import os
from pathlib import Path

from kernelpilot.host.toolchain import RunResult, require_tool, run

GIT_TIMEOUT_S = 60.0
COMMITTER_NAME = "kernelpilot"
COMMITTER_EMAIL = "kernelpilot@localhost"


def git(repo: Path, *args: str, check: bool = True) -> RunResult:
    """Run `git <args>` inside `repo`."""
    exe = require_tool("git")
    return run([str(exe), *args], cwd=repo, timeout_s=GIT_TIMEOUT_S, check=check)


def init_repo(repo: Path) -> None:
    """`git init` with a local identity, no signing, and branch `main`."""
    git(repo, "init", "-q")
    git(repo, "symbolic-ref", "HEAD", "refs/heads/main")
    for key, value in (
        ("user.name", COMMITTER_NAME),
        ("user.email", COMMITTER_EMAIL),
        ("commit.gpgsign", "false"),
        ("core.autocrlf", "false"),
    ):
        git(repo, "config", "--local", key, value)


def commit_all(repo: Path, message: str, paths: list[str] | None = None, allow_empty: bool = False) -> str:
    """Stage `paths` (everything when None) and commit; returns the new HEAD hash."""
    git(repo, "add", "-A", "--", *(paths or ["."]))
    argv = ["commit", "-q", "--no-verify", "-m", message]
    if allow_empty:
        argv.insert(1, "--allow-empty")
    if paths is not None:
        argv += ["--", *paths]
    git(repo, *argv)
    return head(repo)


def nested_repos(repo: Path) -> list[str]:
    """Folders under `repo` that are git repositories or worktrees of their own (a `.git` entry), relative
    and in POSIX form: `git add -A` would record each as a gitlink (eval's `.baseline-tree` worktree)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(repo):
        here = Path(dirpath)
        if here != repo and (".git" in dirnames or ".git" in filenames):
            found.append(here.relative_to(repo).as_posix())
            dirnames[:] = []
            continue
        dirnames[:] = [d for d in dirnames if d != ".git"]
    return sorted(found)


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").stdout.strip()


def has_staged_or_unstaged(repo: Path, paths: list[str]) -> bool:
    """True when `paths` differ from HEAD (including untracked files under them)."""
    out = git(repo, "status", "--porcelain", "--untracked-files=all", "--", *paths).stdout
    return bool(out.strip())


def dirty_entries(repo: Path) -> list[str]:
    """`git status --porcelain` lines: modified, staged, deleted and untracked (not ignored) files."""
    out = git(repo, "status", "--porcelain", "--untracked-files=all").stdout
    return [ln for ln in out.splitlines() if ln.strip()]


def commit_exists(repo: Path, commit: str, path: str) -> bool:
    """True when `commit` exists and holds `path`."""
    res = git(repo, "cat-file", "-e", f"{commit}:{path}", check=False)
    return res.returncode == 0


def restore_file(repo: Path, commit: str, path: str) -> None:
    """Overwrite `path` in the work tree and index with its content at `commit`."""
    git(repo, "checkout", commit, "--", path)


def reset_hard(repo: Path) -> None:
    """Throw away tracked changes since HEAD (used only to undo a half-done operation on a clean tree)."""
    git(repo, "reset", "-q", "--hard", "HEAD")
