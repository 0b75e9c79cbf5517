"""In CI (`KERNELPILOT_CI=1`) nothing the CI installs may skip: every skip in tests/ is listed here with why
it cannot happen in CI, or goes through `@pytest.mark.needs_tool` (tests/conftest.py) or
`tests.needs.needs_module`, which fail in CI. `pytest.importorskip` skips in CI too, so it is not used."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from tests.needs import needs_module

TESTS = Path(__file__).resolve().parents[1]
SKIP = re.compile(r"\bpytest\.(?:skip\(|importorskip\(|mark\.skipif\(|mark\.skip\()")

_OUTSIDE_CI_ONLY = "skips only when KERNELPILOT_CI is not 1 (llvm-objdump too old for it; CI has LLVM 19)"
# file -> why each of its skips cannot happen in CI (count of skip sites, reason)
ALLOWED: dict[str, tuple[int, str]] = {
    "conftest.py": (
        2,
        "needs_tool itself: vendor GPU tools (NOT_INSTALLABLE_IN_CI) and, outside CI only, the rest",
    ),
    "needs.py": (1, "needs_module itself: skips outside CI only"),
    "isa/test_isa_amd.py": (1, _OUTSIDE_CI_ONLY),
    "isa/test_isa_amd_issue_counts.py": (1, _OUTSIDE_CI_ONLY),
    "roofline/test_issue_floor_archs.py": (1, _OUTSIDE_CI_ONLY),
    "foundation/test_guarded_arguments.py": (1, "no /proc: not Linux; CI runs on Linux"),
    "isa/test_isa_pool.py": (1, "no fork start method: Windows only; CI runs on Linux"),
    "wiki/test_wiki_ceilings.py": (1, "a machine with a CUDA GPU; CI has none"),
    "workload/test_remedies.py": (1, "a machine with a GPU; CI has none"),
    "experiments/conftest.py": (1, "no PostgreSQL outside CI; in CI the fixture fails first"),
    "foundation/test_install_and_clients.py": (1, "no npm client outside CI; in CI _need fails first"),
}


def unlisted_skips(root: Path, allowed: dict[str, tuple[int, str]]) -> list[str]:
    """Files under `root` whose count of skip sites differs from the allowed one; fixtures aside."""
    out = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("fixtures/") or path.resolve() == Path(__file__).resolve():
            continue
        found = len(SKIP.findall(path.read_text(encoding="utf-8")))
        want = allowed.get(rel, (0, ""))[0]
        if found != want:
            out.append(f"{rel}: {found} skip site(s), {want} allowed")
    return out


def test_every_skip_is_one_that_cannot_happen_in_ci() -> None:
    assert unlisted_skips(TESTS, ALLOWED) == []


def test_the_policy_check_fails_on_a_planted_skip(tmp_path: Path) -> None:
    (tmp_path / "test_a.py").write_text('import pytest\npytest.importorskip("torch")\n')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "test_b.py").write_text("@pytest.mark.skipif(True, reason='x')\ndef test(): ...\n")
    (tmp_path / "fixtures").mkdir()
    (tmp_path / "fixtures" / "x.py").write_text("pytest.skip('a fixture file, not a test')\n")
    assert unlisted_skips(tmp_path, {}) == [
        "sub/test_b.py: 1 skip site(s), 0 allowed",
        "test_a.py: 1 skip site(s), 0 allowed",
    ]


def test_needs_module_skips_outside_ci_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    assert needs_module("json").dumps([1]) == "[1]"
    monkeypatch.delenv("KERNELPILOT_CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="kp_no_such_module"):
        needs_module("kp_no_such_module")
    monkeypatch.setenv("KERNELPILOT_CI", "1")
    with pytest.raises(pytest.fail.Exception, match="KERNELPILOT_CI=1 and needs the Python package"):
        needs_module("kp_no_such_module")
