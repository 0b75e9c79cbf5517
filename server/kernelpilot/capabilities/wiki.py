"""Capability declarations for the gpu-wiki: `spec`, `gpus`, `audit`."""

from kernelpilot.capabilities import Capability
from kernelpilot.wiki.models import (
    AuditRequest,
    AuditResult,
    GpusRequest,
    GpusResult,
    SpecRequest,
    SpecResult,
)

CAPABILITIES = [
    Capability(
        tool="spec_lookup",
        command=("spec",),
        summary="Look up a cited GPU hardware spec (or all specs of a GPU) in the gpu-wiki.",
        description=(
            "Return a hardware number with its citation `<metric>: <value> <unit> <- <path>:L<line>` from "
            "the "
            "gpu-wiki (bundled + user wikis). GPU by name or alias (H100, h100-sxm5, sm_90, MI300X, gfx942); "
            "metric by key (bf16_dense_tflops, memory_bandwidth_tb_s, ...) or a close name ('bf16 dense'); "
            "omit metric to list all. Unknown GPU/metric gives status 'unknown' with "
            "'UNKNOWN (gpu-wiki not found)': never substitute a remembered number. Ambiguous names list "
            "candidates. Quote the citation line verbatim wherever you use the number."
        ),
        request=SpecRequest,
        result=SpecResult,
        target="kernelpilot.wiki.api:spec_lookup",
        positional=("gpu", "metric"),
        toolset="core",
    ),
    Capability(
        tool="wiki_list_gpus",
        command=("gpus",),
        summary="List the GPUs in the gpu-wiki with their ids, aliases and files.",
        description=(
            "List every GPU the loaded wikis describe (id, vendor, name, file, aliases, cited and measured "
            "values) and wiki load problems. Use it to find the id for `spec_lookup` or `roofline`. With "
            "`missing`, each GPU also lists its UNKNOWN roofline/occupancy-critical metrics (peaks, "
            "bandwidth, SM/CU count, L2, shared/LDS, registers) and issue-floor gaps."
        ),
        request=GpusRequest,
        result=GpusResult,
        target="kernelpilot.wiki.api:list_gpus",
        toolset="core",
    ),
    Capability(
        tool="audit_citations",
        command=("audit",),
        summary="Check every gpu-wiki citation in a workspace's Markdown/JSON files.",
        description=(
            "Scan .md/.json files for citations `<metric>: <value> <unit> <- <path>:L<line>` and check each "
            "against the wiki: 'dangling' (file/line missing or the line states another metric), 'stale' "
            "(the line's value changed since; seen in the wiki file's git history), 'forged' (the cited "
            "value never was on that line). Run before publishing a plan or report; fix every problem by "
            "re-citing from `spec_lookup`. The CLI exits 1 when problems are found."
        ),
        request=AuditRequest,
        result=AuditResult,
        target="kernelpilot.wiki.api:audit_citations",
        positional=("paths",),
        toolset="core",
    ),
]
