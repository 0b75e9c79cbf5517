"""`ceilings measure`: typed errors without a GPU, argument checks, and the recorded H100 lines' format."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelpilot.ceilings.measure import measure_ceilings
from kernelpilot.ceilings.models import CeilingsRequest
from kernelpilot.foundation.errors import DeviceUnavailableError, InvalidArgumentError
from kernelpilot.wiki import parse_spec_line

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "wiki"


def _has_cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


# Justified skip that cannot happen in CI: CI has no GPU (torch is the CPU wheel there), so the no-device
# path always runs; only a developer's GPU machine skips it.
@pytest.mark.skipif(_has_cuda(), reason="this machine has a CUDA GPU; the no-device path cannot be tested")
def test_no_gpu_is_device_unavailable(run_cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DeviceUnavailableError):
        measure_ceilings(CeilingsRequest())
    r = run_cli("ceilings", "measure")
    assert r.code == 1 and "needs" in r.err and "fix:" in r.err


@pytest.mark.parametrize(
    "bad",
    [{"runs": 1}, {"copy_mib": 0}, {"matmul_sizes": [1000]}, {"matmul_sizes": [0]}, {"dtypes": ["fp13"]}],
)
def test_bad_arguments_rejected_before_touching_a_gpu(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidArgumentError):
        measure_ceilings(CeilingsRequest.model_validate(bad))


def test_recorded_h100_lines_are_measured_wiki_lines() -> None:
    text = (FIX / "measured-h100.md").read_text()
    assert "(gpu_id: h100-sxm5)" in text.splitlines()[0]
    keys = {}
    for line in text.splitlines():
        p = parse_spec_line(line)
        if p is None:
            continue
        assert not isinstance(p, str), p
        assert p.measured
        for field in (
            "device=NVIDIA H100 80GB HBM3",
            "driver=",
            "date=",
            "method=",
            "command=",
            "runs=50",
            "median=",
            "spread=",
            "torch=",
        ):
            assert field in p.source, (p.key, field)
        keys[p.key] = p.value
    assert set(keys) == {
        "measured_copy_bandwidth_tb_s",
        "measured_read_bandwidth_tb_s",
        "measured_bf16_matmul_tflops",
        "measured_fp16_matmul_tflops",
        "measured_fp32_matmul_tflops",
        "measured_tf32_matmul_tflops",
        "measured_fp8_matmul_tflops",
    }


def test_device_name_to_wiki_id() -> None:
    from kernelpilot.ceilings.measure import _resolve_gpu

    wiki = [str(FIX / "gpu-wiki-index")]
    assert _resolve_gpu(CeilingsRequest(wiki=wiki), "NVIDIA H100 80GB HBM3")[0] == "h100-sxm5"
    assert _resolve_gpu(CeilingsRequest(wiki=wiki, gpu="H100 PCIe"), "whatever")[0] == "h100-pcie"
    ident, how = _resolve_gpu(CeilingsRequest(wiki=wiki), "NVIDIA H200 NVL")
    assert ident == "nvidia-h200-nvl" and "--gpu" in how
