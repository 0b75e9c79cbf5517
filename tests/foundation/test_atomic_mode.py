"""Files kernelpilot writes atomically are created like any user file: 0o666 less the umask, not mkstemp's
0600 (issue 35: a generated report must be readable by whoever may read the folder)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kernelpilot.foundation.atomic import create_json_exclusive, write_json_atomic, write_text_atomic

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_atomic_writes_follow_the_umask(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        write_text_atomic(tmp_path / "a.txt", "x")
        write_json_atomic(tmp_path / "b.json", {"x": 1})
        assert create_json_exclusive(tmp_path / "c.json", {"x": 1})
        write_text_atomic(tmp_path / "d.txt", "x", mode=0o600)  # a caller can still ask for a private file
    finally:
        os.umask(old)
    for name in ("a.txt", "b.json", "c.json"):
        assert _mode(tmp_path / name) == 0o666 & ~umask, name
    assert _mode(tmp_path / "d.txt") == 0o600


def test_a_generated_svg_and_report_are_readable_by_the_group_and_others(run_cli, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        svg = tmp_path / "roof.svg"
        r = run_cli(
            "roofline",
            "h100-sxm5",
            "--op",
            "gemm",
            "--m",
            "1024",
            "--n",
            "1024",
            "--k",
            "1024",
            "--svg",
            str(svg),
        )
        assert r.code == 0, r.err
        html = tmp_path / "w.html"
        w = run_cli(
            "workload", "report", str(FIXTURES / "workload" / "h100_decode_run1.json"), "--out", str(html)
        )
        assert w.code == 0, w.err
    finally:
        os.umask(old)
    assert _mode(svg) == 0o644 and _mode(html) == 0o644
    assert w.out.startswith(f"wrote {html}") and not w.out.lstrip().startswith("{")  # text unless --json
