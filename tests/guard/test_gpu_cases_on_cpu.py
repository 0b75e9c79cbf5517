"""Issue 40's acceptance on the CPU path for the previous suites: the GPU records' hack and honest cases that
run on a CPU (gpu_cases/, the round-1 red team redteam/) go through the isolated judge as CPU contract tasks.
Every attack is rejected, fails its own run, or is accepted without a confirmed gain over its task's honest
twin; every honest case is accepted; every eval leaves its ledger line and its experiment record
(gpu_cases_cpu.py says how each is run and judged, and which cases need CUDA and why)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.guard.gpu_cases_cpu import EXCLUDED, CpuCase, all_cases, probe_in_child, run_case, runnable

RUN = runnable()
OUT = [c for c in all_cases() if c.name in EXCLUDED]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The task repositories, shared by the module; every eval's runners on one intra-op thread.

    Why one thread: with torch's default (an OpenMP pool of one thread per core) on a shared 2-core host,
    a paired eval of a candidate identical to its baseline read `improved` in 2 of 15 evals (11.98x, CI
    2.81..16.12) and `regressed` in 3, one runner persistently slower for a whole eval by its own clock too;
    with OMP_NUM_THREADS=1, 14 of the 15 read neutral and none improved (2026-12-05, gpu_cases_cpu's fp32,
    inplace and bf16 twins, 5 evals each). The question here is whether an attack gains, not how the judge
    copes with a thread pool fighting the host for cores."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("OMP_NUM_THREADS", "1")
        yield tmp_path_factory.mktemp("gpu-cases-cpu")


@pytest.mark.slow
@pytest.mark.parametrize("case", RUN, ids=[f"{c.name}-{c.task}" for c in RUN])
def test_the_judge_holds_on_the_cpu(root: Path, case: CpuCase) -> None:
    got = run_case(root, case)
    print(
        f"OUTCOME\t{case.name}\t{case.task}\t{case.kind}\t{case.family}\t{got.status}\t{got.speedup}\t"
        f"{got.ci}\t{got.why}\t{got.evidence[:160]!r}"
    )  # fmt: skip  (the table of `pytest -s`)
    why = f"{got.case} ({got.kind}, {case.family}): {got.why}; status {got.status}, speed-up "
    assert got.held, f"{why}{got.speedup} CI {got.ci}; {got.evidence}"


@pytest.mark.slow
@pytest.mark.parametrize("case", OUT, ids=[f"{c.name}-{c.task}" for c in OUT])
def test_an_excluded_case_needs_cuda(tmp_path: Path, case: CpuCase) -> None:
    """The exclusion is what the plain call raised, not a guess: it still raises the recorded error."""
    got = probe_in_child(case, tmp_path)
    assert got["raised"], f"{case.name} runs on the CPU now: move it out of EXCLUDED"
    assert got["raised"].startswith(EXCLUDED[case.name].split(":")[0]), got["raised"]


@pytest.mark.slow
def test_the_probe_tells_a_case_that_runs_from_one_that_needs_cuda(tmp_path: Path) -> None:
    by_name = {(c.name, c.task): c for c in all_cases()}
    runs = probe_in_child(by_name["honest_gemm", "bf16"], tmp_path)
    assert runs == {"raised": None, "calls": 39, "mismatches": []}  # 3 shapes x 13 calls
    wrong = probe_in_child(by_name["identity_gemm", "bf16"], tmp_path)
    assert wrong["raised"] is None and wrong["mismatches"], wrong
    out = probe_in_child(by_name["side_stream", "bf16"], tmp_path)
    assert out["raised"] and out["raised"].startswith("RuntimeError: torch.cuda.Stream requires CUDA"), out


def test_every_record_case_is_run_or_excluded_with_a_reason() -> None:
    names = {c.name for c in all_cases()}
    assert set(EXCLUDED) <= names, set(EXCLUDED) - names
    assert len(RUN) + len(OUT) == len(all_cases())
    assert {c.kind for c in RUN} == {"attack", "honest"}
    assert all(reason.strip() for reason in EXCLUDED.values())
