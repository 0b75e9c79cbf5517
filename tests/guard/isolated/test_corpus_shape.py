"""The red-team corpus of issue 40 is consistent, and every case computes its op when called plainly.

Holds `corpus.py` (the manifest the judge's red-team runner reads) to what its README promises: every case
file exists and its docstring header says what the manifest says, at least two attacks per class 1-6 and
twenty in all, at least fifteen honest look-alikes, every attack's twin an honest case of its contract.
Then the plain call (`plain_call.py`, one fresh interpreter per case, since attacks patch torch when
imported): an attack that is simply wrong is no attack, so each case must match its contract's float64
reference. Process-abuse cases (family 7) are exempt from that call: they exit, segfault, hang, fork,
flood or rewrite files on purpose; only their syntax is checked here, and the judge's runner is what shows
they cannot hang it.
"""

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
CASES_DIR = HERE / "cases"
CONTRACTS_DIR = HERE / "contracts"
HEADER_KEYS = ("kind", "family", "contract", "twin", "idea")
# The honest patterns issue 40 names ("Honest code stays accepted"), each held by at least one case.
REQUIRED_HONEST = (
    "honest_compile_default_gemm",
    "honest_compile_reduce_overhead_rowsoftmax",
    "honest_load_inline_axpy",
    "honest_workspace_gemm",
    "honest_lut_bincount",
    "honest_threadpool_axpy",
    "honest_logging_gemm",
    "honest_lazy_import_sort_int",
    "honest_cudagraph_axpy",
    "honest_two_streams_gemm",
    "honest_triton_autotune_axpy",
)


def _load_corpus():
    spec = importlib.util.spec_from_file_location("isolated_corpus", HERE / "corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["isolated_corpus"] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


CORPUS = _load_corpus()
CASES = CORPUS.CASES
BY_NAME = {case.name: case for case in CASES}


def header(path: Path) -> dict[str, str]:
    """The `key: value` lines that open a case's module docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    lines = doc.splitlines()[: len(HEADER_KEYS)]
    return dict(line.split(": ", 1) for line in lines if ": " in line)


def test_every_case_file_exists_and_its_header_matches_the_manifest():
    assert len(BY_NAME) == len(CASES), "case names must be unique"
    for case in CASES:
        path = CASES_DIR / f"{case.name}.py"
        assert path.is_file(), path
        got = header(path)
        assert list(got) == list(HEADER_KEYS), (case.name, got)
        family = "-" if case.family is None else str(case.family)
        want = {
            "kind": case.kind,
            "family": family,
            "contract": case.contract,
            "twin": case.twin or "-",
            "idea": case.idea,
        }
        assert got == want, case.name
        assert case.function in {
            n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.FunctionDef)
        }, (case.name, case.function)


def test_no_case_file_is_missing_from_the_manifest():
    on_disk = {p.stem for p in CASES_DIR.glob("*.py")}
    assert on_disk == set(BY_NAME)


def test_the_corpus_covers_every_class_and_enough_honest_look_alikes():
    attacks = [c for c in CASES if c.kind == "attack"]
    honest = [c for c in CASES if c.kind == "honest"]
    per_family = {f: sum(c.family == f for c in attacks) for f in range(1, 8)}
    assert all(per_family[f] >= 2 for f in range(1, 7)), per_family
    assert len(attacks) >= 20 and len(honest) >= 15, (len(attacks), len(honest))
    assert all(c.family in range(1, 8) for c in attacks)
    assert all(c.family is None and c.twin is None for c in honest)
    assert set(REQUIRED_HONEST) <= {c.name for c in honest}


def test_every_contract_has_its_plain_twin_and_every_attack_a_twin_of_its_contract():
    for case in CASES:
        contract = json.loads((CONTRACTS_DIR / f"{case.contract}.json").read_text())
        assert (CONTRACTS_DIR / contract["module"]).is_file(), case.contract
        assert contract["device"] == "cpu" and contract["seeds"] >= 2
        assert BY_NAME[f"honest_{case.contract}"].kind == "honest"
        if case.kind == "attack":
            twin = BY_NAME[case.twin]
            assert twin.kind == "honest" and twin.contract == case.contract, case.name
    used = {c.contract for c in CASES}
    assert used == {p.stem for p in CONTRACTS_DIR.glob("*.json")}


def run_plain(case_file: Path, function: str, contract: str, timeout_s: float) -> dict:
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "plain_call.py"),
            str(case_file),
            function,
            str(CONTRACTS_DIR / f"{contract}.json"),
        ],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=HERE,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


PLAIN = [c for c in CASES if c.family != 7]


@pytest.mark.parametrize(
    "case", [pytest.param(c, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in PLAIN]
)
def test_every_case_is_correct_when_called_plainly(case):
    result = run_plain(CASES_DIR / f"{case.name}.py", case.function, case.contract, 900 if case.slow else 180)
    assert result["ok"], result["failures"]
    assert result["calls"] == 12  # 2 shapes x (3 fresh sets + 2 calls on one set + 1 after new values)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES if c.family == 7])
def test_process_abuse_cases_compile(case):
    compile((CASES_DIR / f"{case.name}.py").read_text(), case.name, "exec")


def test_the_plain_call_rejects_a_wrong_candidate_and_a_tensor_subclass(tmp_path):
    wrong = tmp_path / "wrong.py"
    wrong.write_text("import torch\n\ndef candidate(x, y):\n    return torch.add(y, x, alpha=2.49)\n")
    result = run_plain(wrong, "candidate", "axpy", 180)
    assert not result["ok"] and "beyond 2.0x tolerance" in result["failures"][0]
    sub = tmp_path / "sub.py"
    sub.write_text(
        "import torch\n\nclass T(torch.Tensor):\n    pass\n\n"
        "def candidate(x, y):\n    return torch.add(y, x, alpha=2.5).as_subclass(T)\n"
    )
    result = run_plain(sub, "candidate", "axpy", 180)
    assert not result["ok"] and "not a plain torch.Tensor" in result["failures"][0]
