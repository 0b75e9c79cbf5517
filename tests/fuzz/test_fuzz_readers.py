"""Property: every reader, fed mutated real inputs, returns or raises a typed `KernelpilotError`.

A small, derandomized budget per format (the same cases on every run); `bench/fuzz_readers.py` runs
>= 10,000 cases per format."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fuzz_targets import TARGETS, Op, Target, apply, check, mutations

CI_EXAMPLES = 60


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_reader_raises_only_typed_errors(target: Target) -> None:
    @settings(
        max_examples=CI_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.shrink),
        suppress_health_check=list(HealthCheck),
    )
    @given(case=mutations(target))
    def run(case: tuple[Path, list[Op]]) -> None:
        data = apply(*case)
        with tempfile.TemporaryDirectory(prefix="kp-fuzz-") as tmp:
            stray = check(target, data, Path(tmp))
        if isinstance(stray, BaseException):
            raise AssertionError(f"{target.name}: untyped {type(stray).__name__}: {stray}") from stray

    run()


@pytest.mark.parametrize("target", TARGETS, ids=[t.name for t in TARGETS])
def test_seeds_read_cleanly(target: Target, tmp_path: Path) -> None:
    # the unmutated seeds are valid inputs: the reader returns a result for each (no error at all)
    for seed in target.seeds:
        sub = tmp_path / seed.name
        sub.mkdir()
        assert target.read(seed.read_bytes(), sub) is not None
