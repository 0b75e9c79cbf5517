"""The guard's checks and the paired timing in one process (`guard.checked`), on the CPU through eval.

`guard.checked` is the in-process guard eval takes for a GPU contract (a CPU contract goes to the isolated
judge: tests/guard/test_eval_guarded.py); on this GPU-less machine the tests select it the way a GPU machine
would (`_in_process`), to keep it tested until the judge's GPU arena replaces it.

What the one process must keep from the two it replaces: each side imports its own code after the checks
(nothing the checks imported leaks into the timing), the checks' verdict comes first, and a process that
dies or hangs is named after the phase it died in (correctness_failed during the checks, failed after).
The hack suite through eval (`test_eval_guarded.py`) holds the statuses and evidence, among them the
stack-aware candidates that the checks must see as the harness's own process saw them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernelpilot.guard.checked import main as checked_main
from kernelpilot.guard.models import Contract
from kernelpilot.guard.steps import run_checked
from kernelpilot.tasks.create import create_task
from kernelpilot.tasks.evaluate import evaluate
from kernelpilot.tasks.models import CreateTaskRequest, EvaluateRequest
from kernelpilot.timing.models import CompareRequest

CASES = Path(__file__).parent / "cases"


@pytest.fixture(autouse=True)
def _in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Eval routes these CPU contracts to the in-process guard, as it routes a GPU contract."""
    import kernelpilot.tasks.evaluate as evaluate_module

    monkeypatch.setattr(evaluate_module, "_isolated", lambda task: False)


GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t"}
GIT_ENV["GIT_COMMITTER_EMAIL"] = "t@e"
CONTRACT = {"module": "contract_axpy.py", "candidate": "kernel.py:axpy", "shapes": [{"n": 4096}, {"n": 1000}]}
HANG = "def axpy(x, y):\n    while True:\n        pass\n"
# Honest under the checks; spins once kernelpilot's timing is on the stack (the checks' stack has none).
HANG_WHEN_TIMED = """import sys


def axpy(x, y):
    f = sys._getframe(1)
    while f is not None:
        if f.f_globals.get("__name__", "").startswith("kernelpilot.timing"):
            while True:
                pass
        f = f.f_back
    return 2.5 * x + y
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True)


def _task(
    root: Path, files: dict[str, str], allowed: list[str], timeout_s: float = 600.0, venv_lib: str = ""
) -> Path:
    """A repository holding `files` and the axpy contract, a contract task on it, its baseline refreshed;
    `venv_lib` is `kp_once_lib.py` installed in the repository's own (ignored) `.venv`."""
    repo = root / "repo"
    repo.mkdir()
    if venv_lib:
        lib = repo / ".venv" / "lib" / "python3" / "site-packages"
        lib.mkdir(parents=True)
        (lib / "kp_once_lib.py").write_text(venv_lib)
    shutil.copy(CASES / "contract_axpy.py", repo)
    for name, text in files.items():
        (repo / name).write_text(text)
    (repo / "contract.json").write_text(json.dumps({**CONTRACT, "dtype": "fp32"}))
    (repo / ".gitignore").write_text(".kernelpilot/\n__pycache__/\n.venv/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-qm", "base")
    made = create_task(
        CreateTaskRequest(
            name="axpy", contract="contract.json", allowed_file=allowed, workdir=str(repo), runs=2, warmup=0,
            cv_threshold=10.0, timing_mode="warm", timeout_s=timeout_s,
        )
    )  # fmt: skip
    task_dir = repo / made.task_dir
    evaluate(EvaluateRequest(task=str(task_dir), refresh_baseline=True))
    return task_dir


def test_each_side_imports_its_own_helper_after_the_checks_imported_the_candidates(tmp_path: Path) -> None:
    """The checks import the candidate's `helper`; were it left in sys.modules, the baseline side's
    `from helper import axpy` would get the candidate's fast helper and the pair would read neutral."""
    slow, fast = (CASES / "slow_axpy.py").read_text(), (CASES / "honest_axpy.py").read_text()
    kernel = "from helper import axpy  # noqa: F401\n"
    task_dir = _task(tmp_path, {"kernel.py": kernel, "helper.py": slow}, ["kernel.py", "helper.py"])
    (task_dir.parent.parent.parent / "helper.py").write_text(fast)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.method == "paired" and r.status == "improved", r.output_tail
    assert r.ratio_ci is not None and r.ratio_ci[1] < 1.0
    assert r.correctness.startswith("4/4 checked calls passed on 2 shape(s)")


# A library that, like numpy's or torch's compiled core, cannot be imported a second time in one process.
ONCE_LIB = """import builtins

if getattr(builtins, "_kp_once_lib_loaded", False):
    raise ImportError("cannot load kp_once_lib more than once per process")
builtins._kp_once_lib_loaded = True


def axpy(x, y):
    return 2.5 * x + y
"""


def test_a_library_in_the_repositorys_venv_is_imported_once_by_checks_and_timing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks import it first (from `.venv/.../site-packages` inside the workdir); set aside with the
    candidate's own modules, the timing's import would be a second one and the timing would fail."""
    lib = tmp_path / "repo" / ".venv" / "lib" / "python3" / "site-packages"
    monkeypatch.setenv("PYTHONPATH", f"{os.environ.get('PYTHONPATH', '')}:{lib}")
    kernel = "from kp_once_lib import axpy  # noqa: F401\n"
    task_dir = _task(tmp_path, {"kernel.py": kernel}, ["kernel.py"], venv_lib=ONCE_LIB)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.method == "paired" and r.status in ("neutral", "improved", "regressed"), (
        r.output_tail
    )
    assert r.rejection is None and r.pairs is not None


MOVES_ENV = """import os


def axpy(x, y):
    os.environ["KERNELPILOT_GUARD_TASK"] = "/nonexistent/task.json"
    os.chdir("/")
    return 2.5 * x + y
"""
REPLACES_FACTORY = """import kernelpilot.guard.timed as timed


def axpy(x, y):
    timed.make = lambda rotate=1, root=None: [lambda: None] * rotate
    return 2.5 * x + y
"""


def test_the_timing_starts_from_the_environment_and_directory_the_checks_started_from(tmp_path: Path) -> None:
    """A candidate that points KERNELPILOT_GUARD_TASK elsewhere while checked cannot choose what the timing
    loads (a separate harness process could not either)."""
    task_dir = _task(tmp_path, {"kernel.py": (CASES / "honest_axpy.py").read_text()}, ["kernel.py"])
    (task_dir.parent.parent.parent / "kernel.py").write_text(MOVES_ENV)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.method == "paired" and r.rejection is None, r.output_tail
    assert r.status in ("neutral", "improved", "regressed") and r.pairs is not None


def test_a_candidate_that_replaces_the_timing_factory_while_checked_is_rejected(tmp_path: Path) -> None:
    task_dir = _task(tmp_path, {"kernel.py": (CASES / "honest_axpy.py").read_text()}, ["kernel.py"])
    (task_dir.parent.parent.parent / "kernel.py").write_text(REPLACES_FACTORY)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.status == "rejected_timer_replaced" and r.method is None
    assert r.rejection is not None and "replaced: kernelpilot.guard.timed.make" in r.rejection.evidence


# Replaces the CPU timer from a finalizer that runs only when the cycle collector frees it: between the
# checks and the timing (`guard.checked` collects garbage there, before freeing the GPU's cached memory).
FINALIZER = """import gc
import time

gc.disable()


class _Later:
    def __init__(self):
        self.me = self

    def __del__(self):
        time.perf_counter_ns = lambda: 0


def axpy(x, y):
    _Later()
    return 2.5 * x + y
"""


def test_a_timer_replaced_between_the_checks_and_the_timing_is_seen(tmp_path: Path) -> None:
    """One Watch from the candidate's first import to the end of its timing: no gap to act in."""
    task_dir = _task(tmp_path, {"kernel.py": (CASES / "honest_axpy.py").read_text()}, ["kernel.py"])
    (task_dir.parent.parent.parent / "kernel.py").write_text(FINALIZER)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.status == "rejected_timer_replaced" and r.method is None, r.output_tail
    assert r.rejection is not None and "replaced: time.perf_counter_ns" in r.rejection.evidence


def test_a_candidate_that_ends_the_process_during_the_checks_fails_correctness(tmp_path: Path) -> None:
    task_dir = _task(tmp_path, {"kernel.py": (CASES / "honest_axpy.py").read_text()}, ["kernel.py"])
    (task_dir.parent.parent.parent / "kernel.py").write_text(
        "import os\n\n\ndef axpy(x, y):\n    os._exit(3)\n"
    )
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.status == "correctness_failed" and r.method is None
    assert "kernelpilot.guard.checked) exited with code 3" in r.output_tail and r.ratio_median is None


@pytest.mark.parametrize(
    ("kernel", "status", "checked"),
    [(HANG, "correctness_failed", False), (HANG_WHEN_TIMED, "failed", True)],
    ids=["hangs-under-the-checks", "hangs-under-the-timer"],
)
def test_a_killed_process_is_named_after_the_phase_it_hung_in(
    tmp_path: Path, kernel: str, status: str, checked: bool
) -> None:
    """Killed at twice the task's timeout (what the harness and the timing process each had): with no
    report the checks did not finish (as a harness process killed at its timeout); with one, the timing
    did not (as a compare process killed at its timeout)."""
    task_dir = _task(tmp_path, {"kernel.py": (CASES / "honest_axpy.py").read_text()}, ["kernel.py"], 2.0)
    (task_dir.parent.parent.parent / "kernel.py").write_text(kernel)
    r = evaluate(EvaluateRequest(task=str(task_dir))).record
    assert r is not None and r.status == status and r.speedup is None
    assert "did not finish within 4 s" in r.output_tail, r.output_tail
    assert bool(r.correctness) is checked  # the checks' summary is recorded once they passed


def _request_files(tmp_path: Path, candidate: str) -> list[str]:
    """The four arguments of `python -m kernelpilot.guard.checked` for a candidate of the CPU cases."""
    contract = Contract.model_validate({**CONTRACT, "candidate": candidate, "dtype": "fp32"})
    spec = "kernelpilot.guard.timed:make"
    req = CompareRequest(a=spec, b=spec, root_a=str(CASES), root_b=str(CASES), rotate=2, observe=True)
    (tmp_path / "c.json").write_text(contract.model_dump_json())
    (tmp_path / "r.json").write_text(req.model_dump_json())
    return [str(tmp_path / "c.json"), str(CASES), str(tmp_path / "report.json"), str(tmp_path / "r.json")]


def test_checks_that_cannot_load_the_candidate_write_the_typed_error_and_time_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _request_files(tmp_path, "missing.py:axpy")
    assert checked_main(args) == 1
    doc = json.loads(Path(args[2]).read_text())
    assert doc["error"]["error"] == "contract_load" and "missing.py" in doc["error"]["message"]
    assert capsys.readouterr().out == ""  # nothing timed, no compare result
    contract = Contract.model_validate_json(Path(args[0]).read_text())
    req = CompareRequest.model_validate_json(Path(args[3]).read_text())
    got = run_checked(contract, CASES, req, dict(os.environ), 120)
    assert got.harness.report is None and got.stdout == ""
    assert "ContractLoadError: contract candidate 'missing.py:axpy'" in got.harness.failure


def test_a_rejected_candidate_is_reported_and_never_timed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _request_files(tmp_path, "identity_axpy.py:axpy")
    assert checked_main(args) == 0
    report = json.loads(Path(args[2]).read_text())
    assert report["rejection"]["status"] == "rejected_constant_output"
    assert capsys.readouterr().out == ""


def test_checked_takes_four_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert checked_main(["only-one"]) == 2
    assert "usage: python -m kernelpilot.guard.checked" in capsys.readouterr().err
