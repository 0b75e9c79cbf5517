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


def test_bench_holds_benchmarks_and_device_holds_device_calls():
    """bench/ is for benchmarks (and the kernels and models they time); a script for one device call and
    its environment live in device/, each sourcing device/env.sh (AGENTS.md, "Tests")."""
    bench = sorted(p.name for p in (REPO / "bench").iterdir() if p.name != "__pycache__")
    assert bench and all(n.endswith(".py") for n in bench), [n for n in bench if not n.endswith(".py")]
    calls = sorted((REPO / "device").glob("*_next.sh"))
    assert calls, "no device/*_next.sh"
    for script in calls:
        text = script.read_text()
        assert ". device/env.sh" in text or "source device/env.sh" in text, script
    listed = (REPO / "device" / "README.md").read_text()
    unlisted = [p.name for p in calls if f"`{p.name}`" not in listed]
    assert not unlisted, f"device/README.md does not list {unlisted}"
