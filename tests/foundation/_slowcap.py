"""A test-only core function that reports progress (imported by dotted path from the progress test)."""

from kernelpilot.host.doctor import DoctorRequest, DoctorResult


def slow_with_progress(request: DoctorRequest, progress) -> DoctorResult:
    for i in range(3):
        progress(i + 1, 3, f"step {i + 1}")
    return DoctorResult(tools=[], gpus=[], capabilities=[], python_packages={})
