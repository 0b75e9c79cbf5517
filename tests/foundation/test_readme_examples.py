"""The README's examples run as written (issue 35): every ```bash block after a `<!-- ci: run -->` line runs,
command by command, from a scratch folder that sees the checkout's `tests/` (as a fresh clone has it), with
venv's `kernelpilot` first on PATH; each exits 0 and prints every line a `# -> text` comment under it names.
No GPU: blocks that need one are simply not marked."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MARK = "<!-- ci: run -->"


def _blocks() -> list[list[tuple[str, list[str]]]]:
    """Each marked block as (command, [expected text, ...]) in order."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = []
    for m in re.finditer(re.escape(MARK) + r"\s*\n```bash\n(.*?)```", text, flags=re.S):
        steps: list[tuple[str, list[str]]] = []
        for line in m.group(1).splitlines():
            if line.startswith("# ->"):
                assert steps, "a '# ->' line needs a command above it"
                steps[-1][1].append(line[len("# ->") :].strip())
            elif line.strip() and not line.startswith("#"):
                steps.append((line.strip(), []))
        blocks.append(steps)
    return blocks


BLOCKS = _blocks()


def test_the_readme_marks_blocks_to_run() -> None:
    assert len(BLOCKS) >= 1 and sum(len(b) for b in BLOCKS) >= 5
    assert all(cmd.split()[0] == "kernelpilot" for b in BLOCKS for cmd, _ in b)


@pytest.mark.parametrize("block", range(len(BLOCKS)))
def test_readme_block_runs_as_written(block: int, tmp_path: Path) -> None:
    (tmp_path / "tests").symlink_to(ROOT / "tests")  # the fixtures, at the paths the README names
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("KERNELPILOT_TOOLSETS", None)
    for command, expected in BLOCKS[block]:
        run = subprocess.run(
            shlex.split(command), cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, f"{command}\n{run.stderr}"
        for want in expected:
            assert want in run.stdout, f"{command}: README says it prints {want!r}\n{run.stdout[:3000]}"
