"""Capability declaration for `suggest` (suggest_experiments)."""

from kernelpilot.capabilities import Capability
from kernelpilot.suggest.models import SuggestRequest, SuggestResult

CAPABILITIES = [
    Capability(
        tool="suggest_experiments",
        command=("suggest",),
        summary="Rank experiment hypotheses (levers) from a bottleneck verdict, ISA facts and history.",
        description=(
            "After `bottleneck` (classify_bottleneck), pass its JSON (file or inline) and optionally ISA "
            "facts (registers, spills, occupancy limiter, widest load, tensor ops) and history (experiment "
            "records or a task's ledger). Returns a ranked queue; each entry is labelled a HYPOTHESIS with "
            "lever type, target kernel, files, rationale, evidence, the document explaining the lever, risk, "
            "and the eval "
            "contract (what must improve, which correctness checks). Levers: memory-bound -> vectorize/"
            "coalesce/fuse/reuse; compute -> tensor cores/precision/tiling; latency -> occupancy/ILP/launch "
            "config; sync -> fewer barriers/shuffles/aggregated atomics. Levers history says failed are "
            "down-ranked. With root causes in the verdict (bottleneck's `causes`), levers are ranked by the "
            "causes' estimated gains, contradicted levers never appear, and a kernel at its roofline gets "
            "`stop_or_fuse` first. Test the top entry with `kernelpilot eval` before believing it."
        ),
        request=SuggestRequest,
        result=SuggestResult,
        target="kernelpilot.suggest.core:suggest_experiments",
        toolset="experiments",
    )
]
