"""The repository keeps the agreed top level, and README's commands are the ones CI runs."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_top_level_layout():
    for name in (
        "pyproject.toml",
        "skills",
        "server",
        "playbooks",
        "templates",
        "gpu-wiki-index",
        "tests",
        "install.sh",
        "README.md",
        "bench",
        ".ci/run",
    ):
        assert (REPO / name).exists(), name
    assert (REPO / "server" / "kernelpilot" / "__init__.py").is_file()


def test_readme_test_command_is_what_ci_runs():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    m = re.search(r"^TEST_COMMAND='(.+)'$", ci, re.M)
    assert m, "TEST_COMMAND not found in .ci/run"
    assert m.group(1) in readme, "README must show the exact test command CI runs"
    assert 'bash -c "$TEST_COMMAND"' in ci
