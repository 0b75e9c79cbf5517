"""`task create --workdir WS` prints a `next:` command that runs from the folder the user typed it in
(issue 42: it printed the task folder relative to WS, which fails from anywhere but WS)."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import shutil
import sys
from pathlib import Path

from tests.tasks.test_tasks_eval import FIXTURE, git

from kernelpilot.adapters.cli import main


def _project(tmp_path: Path) -> tuple[Path, Path]:
    user = tmp_path / "user"
    ws = user / "kernelpilot-workspaces" / "toy"
    shutil.copytree(FIXTURE, ws)
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "base")
    return user, ws


def _create(cwd: Path, ws: str) -> tuple[int, str]:
    argv = [
        "task", "create", "--name", "toy", "--workdir", ws, "--eval-command",
        json.dumps([sys.executable, "bench.py"]), "--metric-regex", r"time_us: ([0-9.]+)",
        "--allowed-file", "kernel.py",
    ]  # fmt: skip
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.chdir(cwd):
        code = main(argv)
    return code, out.getvalue()


def test_next_path_works_from_the_users_folder(tmp_path: Path) -> None:
    user, _ = _project(tmp_path)
    code, out = _create(user, "kernelpilot-workspaces/toy")
    assert code == 0
    nxt = next(ln for ln in out.splitlines() if ln.startswith("next: "))
    words = shlex.split(nxt.removeprefix("next: "))
    assert words[:2] == ["kernelpilot", "eval"] and words[3] == "--refresh-baseline"
    assert words[2] == "kernelpilot-workspaces/toy/.kernelpilot/tasks/toy"
    assert (user / words[2] / "task.json").is_file()  # from the user's folder, the path names the task
    assert not (user / ".kernelpilot").exists()


def test_a_workdir_outside_the_users_folder_gets_an_absolute_path(tmp_path: Path) -> None:
    _, ws = _project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, out = _create(elsewhere, str(ws))
    assert code == 0
    path = shlex.split(out.splitlines()[-1])[3]
    assert Path(path).is_absolute() and (Path(path) / "task.json").is_file()
