"""Every `kernelpilot ...` example in README.md parses with the real CLI parser (no stale flags)."""

import re
import shlex
from pathlib import Path

import pytest

from kernelpilot.adapters.cli import build_parser

README = Path(__file__).resolve().parents[2] / "README.md"


def _examples() -> list[str]:
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    out = []
    for block in blocks:
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            m = re.search(r"(?:^|&& |\.venv/bin/)kernelpilot (.+)$", line)
            if m:
                out.append(m.group(1))
    return out


def test_readme_has_examples():
    assert len(_examples()) >= 15


@pytest.mark.parametrize("example", _examples())
def test_readme_example_parses(example):
    parser = build_parser()
    try:
        args = parser.parse_args(shlex.split(example))
    except SystemExit as exc:  # argparse reports the bad flag on stderr
        pytest.fail(f"README example does not parse: kernelpilot {example} (exit {exc.code})")
    assert getattr(args, "_capability", None) is not None, example


def test_readme_main_job_runs(run_cli):
    """The first set-up command's main job (Step 0 roofline on the bundled wiki) succeeds as written."""
    first = next(e for e in _examples() if e.startswith("roofline h100-sxm5"))
    r = run_cli(*shlex.split(first))
    assert r.code == 0, r.err
    assert "COMPUTE-BOUND" in r.out and "gpu-wiki-index/nvidia/h100-sxm5.md:L" in r.out
