"""Kernel timing: Python launch closures (CUDA events / labelled CPU fallback) and whole commands.

Submodules: `stats` (summaries, bootstrap CI), `callables` (closure protocol and timers),
`commands` (argv commands and metric extraction), `environment` (GPU/driver/clocks/versions/git),
`core` (the `time_kernel` capability). Heavy imports (torch, numpy) stay inside functions.
"""
