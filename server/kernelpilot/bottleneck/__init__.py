"""Bottleneck classification: compute / memory (DRAM, L2, L1-shared) / latency / synchronization, each verdict
with checkable evidence lines and the next measurements. It reads `KernelProfile`s (kernelpilot.profile),
optional cited peaks and ISA facts; it does not run profilers or hold hardware constants."""
