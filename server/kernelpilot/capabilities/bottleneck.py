"""Capability declaration for `bottleneck` (MCP classify_bottleneck)."""

from kernelpilot.bottleneck.models import ClassifyRequest, ClassifyResult
from kernelpilot.capabilities import Capability

CAPABILITIES = [
    Capability(
        tool="classify_bottleneck",
        command=("bottleneck",),
        summary="Classify each profiled kernel as compute / memory (DRAM, L2, L1-shared) / latency / sync "
        "bound.",
        description=(
            "Give a profile (ncu raw or details CSV, .ncu-rep, rocprofv3 output, or a profile_parse "
            "result as "
            "JSON) and optionally cited peaks and ISA facts. Returns per kernel a verdict "
            "(compute_bound|memory_bound|latency_bound|sync_bound|unknown), the memory level, a confidence, "
            "evidence lines (metric, value, threshold, where to check it) and the next measurements that "
            "would "
            "confirm it. A full-set ncu raw page gives the most evidence (stall reasons, pipes); the "
            "roofline "
            "mode's minimal set gives SOL-based verdicts. Missing data gives 'unknown' with what is missing. "
            "Under the verdict, `causes` lists the firing root-cause rules (uncoalesced access, local "
            "memory, "
            "bank conflicts, occupancy limiter, tail effect, launch overhead, pipe saturation, DRAM at roof, "
            "...) largest estimated gain first, each with its measured quantity, gain formula, levers and "
            "source; `ruled_out` lists rules the evidence contradicts. isa_facts_json also takes the JSON of "
            "`isa fit --json` / `isa resources --json`."
        ),
        request=ClassifyRequest,
        result=ClassifyResult,
        target="kernelpilot.bottleneck.classify:classify_bottleneck",
        positional=("profile_path",),
        toolset="profile",
    )
]
