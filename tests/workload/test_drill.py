"""workload.drill: the ncu filter plan, and the drill through a stand-in `ncu` (no GPU here) that prints a
raw page recorded on an H100 (tests/fixtures/profile/ncu/cublas_gemm_bf16_raw.csv) or ncu's refusal."""

from __future__ import annotations

import json
import re
import stat
import sys
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import InvalidArgumentError, PermissionDeniedError, ToolNotFoundError
from kernelpilot.workload.drill import DrillTarget, HotKernel, drill_hot, main, ncu_filter_args, plan_filters

RAW = Path(__file__).resolve().parent.parent / "fixtures" / "profile" / "ncu" / "cublas_gemm_bf16_raw.csv"
GEMM = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"  # the kernel of that raw page
LN = "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float const*)"


def _fake_ncu(tmp_path: Path, body: str) -> Path:
    """A stand-in ncu: records its argv as JSON, then runs `body` (shell)."""
    exe = tmp_path / "ncu"
    log = tmp_path / "argv.json"
    record = f'import json,sys; json.dump(sys.argv[1:], open("{log}", "w"))'
    exe.write_text(f"#!/bin/sh\n{sys.executable} -c '{record}' \"$@\"\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


def test_plan_picks_a_steady_state_invocation_for_every_kernel() -> None:
    t = DrillTarget(spec="step.py:make", warmup_steps=2)
    hot = [
        HotKernel(name="a_kernel", launches_per_step=1),
        HotKernel(name="b_kernel", launches_per_step=12),
        HotKernel(name="c_kernel", launches_per_step=0.5),
    ]
    p = plan_filters(t, hot)
    # N = max(floor(2 x 12)) + 1 = 25: past b's warm-up (24 launches); c (every other step) needs 50 steps
    assert (p.invocation, p.steps, p.base) == (25, 50, "mangled")
    assert p.pattern == "^(a_kernel|b_kernel|c_kernel)$"
    region = plan_filters(DrillTarget(command=["./app"], region="nvtx:step", warmup_steps=0), hot)
    assert (region.invocation, region.steps) == (1, 1)
    # each instance of the range is one step: past 2 skipped ones as past 2 warm-up calls
    skipped = plan_filters(DrillTarget(command=["./app"], region="nvtx:step", warmup_steps=2), hot)
    assert skipped.invocation == 25
    profiler = plan_filters(DrillTarget(command=["./app"], region="profiler", warmup_steps=2), hot)
    assert (profiler.invocation, profiler.steps) == (1, 1)
    args = ncu_filter_args(region, "nvtx:step")
    assert args[-3:] == ["--nvtx", "--nvtx-include", "step/"]
    assert "::regex:^(a_kernel|b_kernel|c_kernel)$:1" in args


# a kernel as Kineto named it on the H100, and its symbol in libtorch_cuda.so (fixtures/workload/join/gpu)
LN_BF16 = (
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>(int, "
    "float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"
)
LN_SYM = (
    "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_kernelIN3c10"
    "8BFloat16EfLb0EEEviT0_PKT_S8_S8_PS5_S9_PS6_"
)


def test_kernels_without_their_symbol_are_filtered_by_their_own_name() -> None:
    p = plan_filters(DrillTarget(spec="s.py:f"), [HotKernel(name=LN_BF16, launches_per_step=4)])
    assert p.base == "mangled" and p.pattern == "^(_Z.*28vectorized_layer_norm_kernel.*)$" and not p.keys
    rx = re.compile(p.pattern)
    assert rx.match(LN_SYM) and not rx.match("_ZN2at6native29vectorized_elementwise_kernelILi8E")
    # with the join's symbol the filter is exact
    p2 = plan_filters(
        DrillTarget(spec="s.py:f"), [HotKernel(name=LN_BF16, launches_per_step=4, symbol=LN_SYM)]
    )
    assert p2.pattern == f"^({LN_SYM})$" and p2.keys == {LN_SYM: 0} and not p2.loose


def test_drill_gives_a_roofline_position_and_names_the_kernel_it_missed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path, f"cat '{RAW}'\n")))
    hot = [
        HotKernel(name=GEMM, launches_per_step=1, us_per_step=180.0),
        HotKernel(name="kp_never_launched_kernel", launches_per_step=2),
        HotKernel(name="Memset (Device)", launches_per_step=1),
    ]
    raw = tmp_path / "raw.csv"
    res = drill_hot(DrillTarget(spec="step.py:make", workdir=str(tmp_path)), hot, raw_csv=raw)
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--kernel-id") + 1] == f"::regex:^({GEMM}|kp_never_launched_kernel)$:5"
    assert argv[argv.index("--kernel-name-base") + 1] == "mangled"
    assert argv[-8:-6] == ["-m", "kernelpilot.workload.drill"] and argv[-1] == "7"  # 2 warm-up + 5 steps
    assert raw.read_text() == RAW.read_text()
    gemm, missed, memset = res
    assert gemm.ok and gemm.duration_us == pytest.approx(175.744)
    assert gemm.roof == "compute" and gemm.bound == "compute_bound"
    # 2*4096^3 FLOPs at the cited bf16 dense peak, vs the measured 175.744 us
    assert gemm.attainable_us == pytest.approx(137438953472 / 989.4e12 * 1e6)
    assert gemm.pct_of_attainable == pytest.approx(100 * gemm.attainable_us / 175.744)
    assert any("h100-sxm5.md:L42" in c for c in gemm.citations)
    assert not missed.ok and missed.error.startswith("kp_never_launched_kernel: no launch was profiled")
    assert not memset.ok and "not a kernel" in memset.error


def test_a_program_that_dies_keeps_what_was_profiled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    body = f"cat '{RAW}'\necho 'RuntimeError: CUDA error: an illegal memory access' >&2\nexit 1\n"
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path, body)))
    hot = [HotKernel(name=GEMM, launches_per_step=1), HotKernel(name="later_kernel", launches_per_step=1)]
    gemm, later = drill_hot(DrillTarget(command=["./app"], workdir=str(tmp_path)), hot)
    assert gemm.ok and gemm.pct_of_attainable is not None
    assert not later.ok
    assert (
        later.error.startswith("later_kernel: ncu exited with code 1")
        and "illegal memory access" in later.error
    )


def test_profiler_refusals_are_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hot = [HotKernel(name=GEMM, launches_per_step=1)]
    target = DrillTarget(command=["./app"], workdir=str(tmp_path))
    body = (
        "echo '==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0.'\nexit 0\n"
    )
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path, body)))
    with pytest.raises(PermissionDeniedError):
        drill_hot(target, hot)
    monkeypatch.setenv("KERNELPILOT_NCU", str(tmp_path / "no-such-ncu"))
    with pytest.raises(ToolNotFoundError):
        drill_hot(target, hot)


@pytest.mark.parametrize(
    "target",
    [
        DrillTarget(spec="s.py:f", command=["./app"]),
        DrillTarget(),
        DrillTarget(command=[]),
        DrillTarget(spec="s.py:f", region="profiler"),
        DrillTarget(command=["./app"], region="step"),
    ],
)
def test_bad_targets_are_typed(target: DrillTarget) -> None:
    with pytest.raises(InvalidArgumentError):
        drill_hot(target, [HotKernel(name=GEMM, launches_per_step=1)])


def test_closure_runner_calls_the_closure_steps_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "step.py"
    f.write_text("calls = []\ndef make():\n    return lambda: calls.append(1)\n")
    assert main(["--spec", f"{f}:make", "--steps", "3"]) == 0
    mods = [m for m in sys.modules.values() if getattr(m, "__file__", None) == str(f)]
    assert len(mods[0].calls) == 3
    f.write_text("def make():\n    def boom():\n        raise ValueError('bad input')\n    return boom\n")
    assert main(["--spec", f"{f}:make", "--steps", "1"]) == 2
    assert "the closure raised ValueError: bad input" in capsys.readouterr().err


ROCPROF = Path(__file__).resolve().parent.parent / "fixtures" / "profile" / "rocprofv3"


def test_amd_drill_through_rocprofv3_counters(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where only rocprofv3 is installed: the counter CSV (the hand-written one of tests/fixtures/profile,
    no AMD GPU here) and the real MI350X agent info give each kernel its DRAM bytes and roofline position."""
    body = (
        'out=""; prev=""; for a in "$@"; do [ "$prev" = "-d" ] && out="$a"; prev="$a"; done\n'
        'mkdir -p "$out/host/1"\n'
        f"cp '{ROCPROF / 'synthetic_counter_collection.csv'}' \"$out/host/1/kp_counter_collection.csv\"\n"
        f"cp '{ROCPROF / 'small_agent_info.csv'}' \"$out/host/1/kp_agent_info.csv\"\n"
    )
    monkeypatch.setenv("KERNELPILOT_NCU", str(tmp_path / "no-ncu"))
    monkeypatch.setenv("KERNELPILOT_ROCPROFV3", str(_fake_ncu(tmp_path, body)))
    hot = [
        HotKernel(name="void stream_copy(float*, float const*, int)", launches_per_step=1),
        HotKernel(name="never_dispatched", launches_per_step=1),
    ]
    copy, missed = drill_hot(DrillTarget(spec="s.py:make", workdir=str(tmp_path)), hot)
    argv = json.loads((tmp_path / "argv.json").read_text())
    assert argv[argv.index("--kernel-include-regex") + 1] == "(never_dispatched|stream_copy)"
    assert argv[argv.index("--kernel-iteration-range") + 1] == "[3]"
    assert "FETCH_SIZE" in argv and "SQ_INSTS_VALU_MFMA_MOPS_BF16" in argv
    assert copy.ok and copy.dram_bytes == 2 * 4096 * 1024 and copy.duration_us == pytest.approx(100.0)
    assert copy.roof == "memory" and any("mi350x.md" in c for c in copy.citations)
    assert not missed.ok and missed.error.startswith("never_dispatched: no launch was profiled")
    with pytest.raises(InvalidArgumentError):
        drill_hot(DrillTarget(command=["./app"], region="profiler"), hot)
