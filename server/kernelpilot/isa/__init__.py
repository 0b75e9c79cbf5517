"""ISA extraction: code objects (cubin, fatbin, HSACO, clang offload bundles) -> per-kernel resources,
disassembly and instruction mix, occupancy per architecture, and the ISA Fit View.

Owns: reading GPU code objects in pure Python (no GPU, no vendor tool needed for resources), running the
disassemblers through `kernelpilot.host.toolchain`, the occupancy model with its cited constants table, and
the fit-view heuristics. It does not profile or time kernels (see `profile`, `bench`).
"""
