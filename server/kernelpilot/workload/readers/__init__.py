"""Readers of activity traces into one `Trace` (workload/readers/trace.py); `read_trace` picks by content."""
