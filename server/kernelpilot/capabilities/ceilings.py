"""Capability declaration for `ceilings measure`."""

from kernelpilot.capabilities import Capability
from kernelpilot.ceilings.models import CeilingsRequest, CeilingsResult

CAPABILITIES = [
    Capability(
        tool="ceilings_measure",
        command=("ceilings", "measure"),
        summary="Measure this GPU's copy/read bandwidth and matmul ceilings; emit `## Measured` wiki lines.",
        description=(
            "On a machine with a CUDA GPU and PyTorch: measure device-to-device copy bandwidth (read+write "
            "bytes), read bandwidth (sum reduction) and square-matmul TFLOP/s for bf16/fp16/fp32/tf32/fp8 "
            "(warm-up, median of many CUDA-event-timed runs, clocks untouched) and return wiki lines with "
            "full "
            "provenance (device, driver, torch, date, method, command, runs, median, spread). With `out` the "
            "lines are written as a one-GPU user wiki file; pass its folder as `wiki` to `roofline` to get "
            "spec vs measured. Takes about a minute; fails with DeviceUnavailableError without a GPU."
        ),
        request=CeilingsRequest,
        result=CeilingsResult,
        target="kernelpilot.ceilings.measure:measure_ceilings",
        read_only=False,
        long_running=True,
        takes_progress=True,
        toolset="measure",
        open_world=True,
    )
]
