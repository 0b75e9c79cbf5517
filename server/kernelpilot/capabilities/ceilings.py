"""Capability declaration for `ceilings measure`."""

from kernelpilot.capabilities import Capability
from kernelpilot.ceilings.models import CeilingsRequest, CeilingsResult

CAPABILITIES = [
    Capability(
        tool="ceilings_measure",
        command=("ceilings", "measure"),
        summary="Measure this GPU's bandwidth, matmul and latency ceilings; emit `## Measured` wiki lines.",
        description=(
            "On a machine with a CUDA GPU and PyTorch: measure device-to-device copy bandwidth (read+write "
            "bytes), read bandwidth (sum reduction), square-matmul TFLOP/s for bf16/fp16/fp32/tf32/fp8 and "
            "the latency floor measured_min_kernel_us (the smallest kernel's per-launch time, which the "
            "roofline and the workload triage use for kernels too small for their bytes to matter) (warm-up, "
            "median of many CUDA-event-timed runs, clocks untouched) and return wiki lines with full "
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
