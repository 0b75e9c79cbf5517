"""The CPU half of the hack suite: every semantic hack rejected with its own status, every look-alike
accepted (numpy contracts in tests/guard/cases; the torch/GPU half is tests/guard/gpu_suite.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kernelpilot.guard import contract as cmod
from kernelpilot.guard.errors import ContractError, ContractLoadError
from kernelpilot.guard.harness import main as harness_main
from kernelpilot.guard.harness import run_checks
from kernelpilot.guard.models import Contract, Tolerance

CASES = Path(__file__).parent / "cases"
AXPY: dict[str, Any] = {
    "module": "contract_axpy.py",
    "shapes": [{"n": 4096}, {"n": 1000}, {"n": 4099}],  # the timed size is a tile multiple; the others not
    "dtype": "fp32",
}
GEMM: dict[str, Any] = {
    "module": "contract_gemm.py",
    "shapes": [{"m": 256, "n": 256, "k": 256}, {"m": 100, "n": 77, "k": 130}],
    "dtype": "fp32",
    "reduction": "k",
}

HACKS = [
    ("identity_axpy.py:axpy", AXPY, {}, "rejected_constant_output", "equals input 1 bitwise"),
    ("constant_axpy.py:axpy", AXPY, {}, "rejected_constant_output", "constant 0.0"),
    ("cached_axpy.py:axpy", AXPY, {}, "rejected_cached_output", "earlier call with different input values"),
    ("stale_axpy.py:axpy", AXPY, {"out": True}, "rejected_stale_output", "still hold the poison"),
    ("inplace_axpy.py:axpy", AXPY, {}, "rejected_input_mutation", "input(s) [0] changed"),
    ("lowp_axpy.py:axpy", AXPY, {}, "rejected_precision", "within the tolerance of tf32/fp16"),
    ("lowp_gemm.py:gemm", GEMM, {}, "rejected_precision", "not of the declared fp32"),
    ("tiled_axpy.py:axpy", AXPY, {}, "rejected_shape_specific", "correct on the timed shape"),
    ("lazy_axpy.py:axpy", AXPY, {}, "rejected_lazy_output", "not a plain numpy.ndarray"),
    ("noisy_axpy.py:axpy", AXPY, {}, "rejected_nondeterministic", "different outputs"),
    # issue 31: a memo keyed on the buffers' addresses and the first values, on the same buffers with new
    # values away from the ends (the fresh seeds and the determinism calls all miss it)
    ("memo_fp_axpy.py:axpy", AXPY, {}, "rejected_cached_output", "away from the ends of input 0 changed"),
    ("memo_fp_axpy.py:axpy", AXPY, {"out": True}, "rejected_cached_output", "memo keyed on pointers"),
]
BENIGN = [
    ("honest_axpy.py:axpy", AXPY, {}),  # correct on every shape
    ("fused_axpy.py:axpy", AXPY, {}),  # a fused kernel (one output buffer, no temporary)
    ("inplace_axpy.py:axpy", AXPY, {"in_place": [0]}),  # in-place, declared
    ("out_axpy.py:axpy", AXPY, {"out": True}),  # writes every element of the poisoned buffer
    ("honest_gemm.py:gemm", GEMM, {}),  # the library call
    ("checksum_memo_axpy.py:axpy", AXPY, {}),  # a memo keyed on every value: recomputes when any changes
]


@pytest.mark.parametrize(
    ("candidate", "base", "extra", "status", "evidence"), HACKS, ids=[h[0] for h in HACKS]
)
def test_each_semantic_hack_is_rejected_with_its_status(
    candidate: str, base: dict[str, Any], extra: dict[str, Any], status: str, evidence: str
) -> None:
    report = run_checks(Contract(candidate=candidate, **base, **extra), CASES)
    assert report.rejection is not None, report
    assert report.rejection.status == status
    assert report.rejection.check == "semantic"
    assert evidence in report.rejection.evidence


@pytest.mark.parametrize(("candidate", "base", "extra"), BENIGN, ids=[b[0] for b in BENIGN])
def test_each_benign_look_alike_is_accepted(
    candidate: str, base: dict[str, Any], extra: dict[str, Any]
) -> None:
    report = run_checks(Contract(candidate=candidate, **base, **extra), CASES)
    assert report.rejection is None and not report.error, report
    seeds = Contract(candidate=candidate, **base).seeds
    assert len(report.calls) == len(base["shapes"]) * seeds  # every shape, a fresh seed per call
    assert len({c.seed for c in report.calls}) == len(report.calls)
    assert all(c.ok and c.max_rel_err is not None and c.max_ulp_err is not None for c in report.calls)


def test_errors_are_reported_in_ulps_and_relative_terms() -> None:
    report = run_checks(Contract(candidate="lowp_axpy.py:axpy", **AXPY), CASES)
    assert report.rejection is not None
    nums = report.rejection.numbers
    assert nums["max_ulp_err"] > 1000 and 1e-3 < nums["max_rel_err"] < 1.0  # fp16 rounding, in fp32 ULPs
    honest = run_checks(Contract(candidate="honest_axpy.py:axpy", **AXPY), CASES)
    # numpy computes 2.5 x + y in fp32 (two roundings); ULPs are counted at the output's RMS scale
    assert max(c.max_ulp_err or 0 for c in honest.calls) <= 2.0


def test_default_tolerance_follows_the_dtype_and_the_reduced_length() -> None:
    c = Contract(candidate="honest_gemm.py:gemm", **GEMM)
    tol, why = cmod.tolerance(c, {"m": 1, "n": 1, "k": 256})
    assert tol.rtol == pytest.approx(4 * (2**-24 + 2**-24 * 16))
    assert "sqrt(256)" in why and "atol = rtol x RMS" in why
    bf16, _ = cmod.tolerance(c.model_copy(update={"dtype": "bf16"}), {"k": 4096})
    assert bf16.rtol == pytest.approx(4 * (2**-8 + 2**-24 * 64))  # output rounding dominates, fp32 accumulate
    over = c.model_copy(update={"tolerance": Tolerance(rtol=0.5, atol=0.0)})
    assert cmod.tolerance(over, {"k": 4})[0].rtol == 0.5


def test_an_override_tolerance_lets_a_lower_precision_kernel_pass() -> None:
    loose = run_checks(Contract(candidate="lowp_axpy.py:axpy", tolerance=Tolerance(rtol=1e-2), **AXPY), CASES)
    assert loose.rejection is None and loose.tolerance_source == "contract override"


def test_a_candidate_that_raises_on_the_timed_shape_is_an_error_not_a_rejection(tmp_path: Path) -> None:
    (tmp_path / "contract_axpy.py").write_text((CASES / "contract_axpy.py").read_text())
    (tmp_path / "boom.py").write_text("def axpy(x, y):\n    raise RuntimeError('no kernel')\n")
    report = run_checks(Contract(candidate="boom.py:axpy", **AXPY), tmp_path)
    assert report.rejection is None and "RuntimeError: no kernel" in report.error


def test_contract_errors_are_typed(tmp_path: Path) -> None:
    (tmp_path / "contract_axpy.py").write_text((CASES / "contract_axpy.py").read_text())
    (tmp_path / "k.py").write_text("def axpy(x, y):\n    return 2.5 * x + y\n")
    with pytest.raises(ContractLoadError, match="candidate"):
        run_checks(Contract(candidate="missing.py:axpy", **AXPY), tmp_path)
    with pytest.raises(ContractError, match="not a float format"):
        run_checks(Contract(candidate="k.py:axpy", **{**AXPY, "dtype": "int8"}), tmp_path)
    (tmp_path / "fixed.py").write_text(
        "import numpy as np\ndef make_inputs(shape, dtype, seed, device):\n"
        "    return [np.ones(shape['n'], np.float32), np.ones(shape['n'], np.float32)]\n"
        "def reference(x, y):\n    return 2.5 * x + y\n"
    )
    with pytest.raises(ContractError, match="same reference output for two seeds"):
        run_checks(Contract(candidate="k.py:axpy", **{**AXPY, "module": "fixed.py"}), tmp_path)


def test_the_harness_entry_point_prints_one_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.json"
    path.write_text(Contract(candidate="cached_axpy.py:axpy", **AXPY).model_dump_json())
    assert harness_main([str(path), str(CASES)]) == 0
    from kernelpilot.guard.models import HarnessReport

    report = HarnessReport.model_validate_json(capsys.readouterr().out)
    assert report.rejection is not None and report.rejection.status == "rejected_cached_output"
    bad = tmp_path / "bad.json"
    bad.write_text(Contract(candidate="nope.py:f", **AXPY).model_dump_json())
    assert harness_main([str(bad), str(CASES)]) == 1
    assert '"contract_load"' in capsys.readouterr().out
