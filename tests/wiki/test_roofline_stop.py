"""The one stop verdict (kernelpilot.roofline.stop): the attainable target from the measured ceiling, the
spec target beside it and never mixed in, MET exactly at the target, `stop_or_fuse` exactly when MET, and
`roofline --basis measured` on a memory-bound vector op (issue 27: it refused before)."""

from __future__ import annotations

import json

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError, UnknownSpecError
from kernelpilot.roofline import RooflineRequest, analyze
from kernelpilot.roofline.models import Ceiling
from kernelpilot.roofline.stop import stop_verdict
from kernelpilot.wiki import Wiki, load_wiki

MEASURED = Ceiling(
    metric="measured_copy_bandwidth_tb_s", value=3.0, unit="TB/s", citation="m <- x:L1", measured=True
)
SPEC = Ceiling(metric="memory_bandwidth_tb_s", value=3.35, unit="TB/s", citation="s <- x:L2", measured=False)
# The trial's SwiGLU: T=8192, H=14336 bf16, two inputs of T x H read, one T x H written.
SWIGLU = {"op": "elementwise", "numel": 8192 * 14336, "inputs": 2, "outputs": 1, "dtype": "bf16"}


def test_target_is_the_measured_ceiling_and_spec_is_only_beside() -> None:
    work = 3.0e12 * 0.9 * 100e-6  # bytes that take exactly 100 us at 90% of 3.0 TB/s
    v = stop_verdict("memory", work, MEASURED, SPEC, measured_time_us=100.0)
    assert v.target_time_us == pytest.approx(100.0)
    assert v.spec_target_time_us == pytest.approx(100.0 * 3.0 / 3.35)
    assert v.status == "MET" and v.lever == "stop_or_fuse"
    assert v.pct_of_ceiling == pytest.approx(90.0) and v.pct_of_spec == pytest.approx(90.0 * 3.0 / 3.35)
    assert "90% of the measured ceiling m <- x:L1" in v.text and "shown beside, not used" in v.text
    late = stop_verdict("memory", work, MEASURED, SPEC, measured_time_us=100.01)
    assert late.status == "NOT MET" and late.lever is None and "stop_or_fuse" not in late.text
    unknown = stop_verdict("memory", work, MEASURED, SPEC)
    assert unknown.status == "UNKNOWN" and unknown.lever is None and unknown.pct_of_ceiling is None


def test_without_a_measured_ceiling_the_spec_is_the_target() -> None:
    v = stop_verdict("memory", 3.35e12 * 0.9 * 1e-4, SPEC, SPEC, measured_time_us=100.0)
    assert v.spec_ceiling is None and v.ceiling.metric == "memory_bandwidth_tb_s" and v.status == "MET"
    assert "of the spec ceiling" in v.text


@pytest.mark.parametrize(
    ("work", "time_us", "fraction"), [(0.0, 10.0, 0.9), (1e9, -1.0, 0.9), (1e9, 10.0, 1.5)]
)
def test_bad_input_is_a_typed_error(work: float, time_us: float, fraction: float) -> None:
    with pytest.raises(InvalidArgumentError):
        stop_verdict("memory", work, MEASURED, SPEC, time_us, fraction)
    bad = Ceiling(metric="x", value=1.0, unit="furlongs", citation="c", measured=False)
    with pytest.raises(InvalidArgumentError):
        bad.per_s()


def test_trial_numbers_on_the_bundled_h100() -> None:
    """236.1 us for the fixed SwiGLU: NOT MET on the spec target (233.7 us) but MET on the measured one —
    the contradiction of issue 27 item 1 now resolves to one verdict, shown with both targets."""
    wiki = load_wiki([])
    r = analyze(RooflineRequest.model_validate({"gpu": "H100", **SWIGLU, "measured_time_us": 236.1}), wiki)
    st = r.stop
    copy = wiki.lookup("H100", "measured_copy_bandwidth_tb_s")
    assert st.bound == "memory" and st.ceiling.citation == copy.citation()
    assert st.target_time_us == pytest.approx(r.bytes / (copy.number() * 1e12) / 0.9 * 1e6)
    assert st.spec_target_time_us == pytest.approx(233.7, abs=0.05)  # the spec target, beside
    assert st.status == "MET" and st.lever == "stop_or_fuse"
    assert r.target_time_us == st.target_time_us
    assert any(s.startswith("stop verdict MET") for s in r.stop_conditions)
    assert "stop verdict MET" in r.render_text()


def test_basis_measured_works_for_a_memory_bound_vector_op(small_wiki: Wiki) -> None:
    with pytest.raises(UnknownSpecError, match="measured_copy_bandwidth_tb_s"):  # no `## Measured` lines
        analyze(RooflineRequest.model_validate({"gpu": "H100", **SWIGLU, "basis": "measured"}), small_wiki)
    any_wiki = load_wiki([])  # the bundled wiki: H100 has a measured copy ceiling
    r = analyze(RooflineRequest.model_validate({"gpu": "H100", **SWIGLU, "basis": "measured"}), any_wiki)
    assert r.bound == "memory" and r.memory_peak.measured and not r.compute_peak.measured
    assert "no measured ceiling for it" in r.peak_choice
    # a compute-bound vector op has no measured vector ceiling: refused, naming the binding roof
    heavy = {**SWIGLU, "flops_per_element": 1e5, "basis": "measured"}
    with pytest.raises(InvalidArgumentError, match="binding compute roof"):
        analyze(RooflineRequest.model_validate({"gpu": "H100", **heavy}), any_wiki)


def test_cli_basis_measured_and_json_verdict(run_cli) -> None:  # type: ignore[no-untyped-def]
    args = ["--op", "elementwise", "--numel", str(8192 * 14336), "--dtype", "bf16"]
    r = run_cli("--json", "roofline", "H100", *args, "--basis", "measured", "--measured-time-us", "1106")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    assert out["stop"]["status"] == "NOT MET" and out["stop"]["lever"] is None
    assert out["stop"]["ceiling"]["metric"] == "measured_copy_bandwidth_tb_s"
    r = run_cli("roofline", "H100", *args, "--measured-time-us", "236.1")
    assert r.code == 0 and "stop verdict MET" in r.out and "lever: stop_or_fuse" in r.out
