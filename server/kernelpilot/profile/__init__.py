"""Profiling: run `ncu` / `rocprofv3` with the fewest passes that answer the question and parse what they
write.

Owns the ncu argv builder and runner, parsers for ncu CSV pages (raw, details, source), the rocprofv3 runner
and its CSV/JSON parsers, the normalized `KernelProfile`, the minimal-pass roofline metric set and hotspots.
It does not classify bottlenecks (see `kernelpilot.bottleneck`) nor hold hardware peaks (see the wiki).
"""
