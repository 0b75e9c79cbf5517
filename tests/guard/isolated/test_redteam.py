"""Issue 40's acceptance on the CPU path: every attack of the isolated red-team corpus is rejected or gains
nothing over its honest twin, every honest look-alike is accepted, and no eval loses its record
(judging.py says how each outcome is judged; corpus.py and README.md describe the cases)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.guard.isolated.corpus import CASES
from tests.guard.isolated.judging import run_case

RUN = [c for c in CASES if not c.gpu_only]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("redteam")


@pytest.mark.slow
@pytest.mark.parametrize("case", RUN, ids=[c.name for c in RUN])
def test_the_judge_holds(root: Path, case: object) -> None:
    got = run_case(root, case)
    why = f"{got.case} ({got.kind}, family {got.family}): {got.why}; status {got.status}, speed-up "
    assert got.held, f"{why}{got.speedup} CI {got.ci}; {got.evidence}"
