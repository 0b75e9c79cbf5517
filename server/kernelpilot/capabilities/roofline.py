"""Capability declaration for `roofline`."""

from kernelpilot.capabilities import Capability
from kernelpilot.roofline.models import RooflineRequest, RooflineResult

CAPABILITIES = [
    Capability(
        tool="roofline",
        command=("roofline",),
        summary="Roofline of a kernel on a GPU from cited peaks: bound, time floor, 90% Stop Conditions.",
        description=(
            "Count FLOPs and DRAM bytes from an op description (gemm/bmm m,n,k; elementwise numel; "
            "reduction/softmax/layernorm/rmsnorm rows,cols; attention batch,heads,seq_q,seq_k,head_dim,"
            "causal; topk rows,cols,k) "
            "or take flops + bytes_moved directly, pick the peak that applies (tensor vs vector unit by "
            "dtype; "
            "fp32 GEMM uses fp32_vector unless allow_tf32), and return arithmetic intensity, ridge point, "
            "compute/memory bound, the time floor and Stop Conditions at target_fraction (default 90%) of "
            "the "
            "roofline, all with wiki citations. With isa (code object) + grid + block, or ncu_csv (full-set "
            "raw page), adds the instruction-issue floor from the kernel's own warp instructions at the "
            "cited issue and pipe rates; the highest of the memory, FLOP and issue floors binds. Give "
            "measured_time_us to get % of peak; a time under the floor is IMPOSSIBLE (exit 1, below_floor "
            "says what to check), never a percentage over 100. Shows spec vs "
            "measured ceilings when the wiki has `## Measured` lines. Refuses (UNKNOWN) when a needed peak "
            "is not in the wiki: never supply a number yourself. ASCII chart in text; SVG in `svg` "
            "(or --svg FILE)."
        ),
        request=RooflineRequest,
        result=RooflineResult,
        target="kernelpilot.roofline.core:run_roofline",
        positional=("gpu",),
        toolset="core",
        read_only=False,
        idempotent=True,
    )
]
