"""The shape of a root-cause rule and the context it reads.

A rule is a declared unit: its name, the metrics it reads, the document that explains it, and one check
function that either returns a `Finding` (fired: the measured quantity, the estimated gain with its formula,
the levers), a `Clear` (evaluated on real data and not fired: the reason, which contradicts its levers), or
None (its metrics are not in this input). Thresholds are kernelpilot heuristics unless a line cites ncu.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kernelpilot.bottleneck.models import Cause, Evidence
from kernelpilot.profile.models import KernelProfile
from kernelpilot.roofline.models import StopVerdict

NCU_GUIDE = "https://docs.nvidia.com/nsight-compute/ProfilingGuide/index.html"
BPG = "https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html"
PG = "https://docs.nvidia.com/cuda/cuda-c-programming-guide/index.html"

# Memory-side stall reasons (ncu Warp State Statistics names).
MEM_STALLS = ("long_scoreboard", "lg_throttle", "mio_throttle", "short_scoreboard", "drain", "tex_throttle")


@dataclass
class Ctx:
    """What the rules read: one kernel's profile (raw metrics), ISA facts, and where they came from."""

    p: KernelProfile
    where: str
    isa: dict[str, object] = field(default_factory=dict)
    stop: StopVerdict | None = (
        None  # the memory stop verdict (kernelpilot.roofline.stop), when a ceiling is known
    )

    def f(self, name: str) -> float | None:
        v = self.p.raw_metrics.get(name)
        return v if isinstance(v, float) else None

    def first(self, *names: str) -> tuple[str, float] | None:
        for n in names:
            v = self.f(n)
            if v is not None:
                return n, v
        return None

    def isa_num(self, key: str) -> float | None:
        v = self.isa.get(key)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def loads_per_thread(self) -> float | None:
        """Global load instructions per thread (warp instructions x 32 / launched threads): a handful in a
        loop-free kernel, one set per iteration in a loop (kernelpilot.suggest.playbook reads it)."""
        inst = self.f("smsp__sass_inst_executed_op_global_ld.sum")
        grid, block = self.f("launch__grid_size"), self.f("launch__block_size")
        if inst is None or not grid or not block:
            return None
        return round(inst * 32 / (grid * block), 2)

    def stalls(self) -> dict[str, float]:
        return {k: v for k, v in self.p.warp_stalls.items() if k != "selected"}

    def top_stall(self) -> tuple[str, float] | None:
        st = self.stalls()
        total = sum(st.values())
        if not total:
            return None
        name = max(st, key=lambda k: st[k])
        return name, st[name] / total

    def mem_stall_share(self) -> float | None:
        st = self.stalls()
        total = sum(st.values())
        return sum(st.get(r, 0.0) for r in MEM_STALLS) / total if total else None

    def dram_pct(self) -> float | None:
        return self.p.dram_throughput_pct

    def busiest_memory(self) -> tuple[str, float] | None:
        p = self.p
        vals = {
            "memory": p.memory_throughput_pct,
            "L1": p.l1_throughput_pct,
            "L2": p.l2_throughput_pct,
            "DRAM": p.dram_throughput_pct,
        }
        known = {k: v for k, v in vals.items() if v is not None}
        if not known:
            return None
        k = max(known, key=lambda x: known[x])
        return k, known[k]

    def busiest_unit(self) -> float | None:
        vals = [
            v
            for v in (
                self.p.sm_throughput_pct,
                self.p.memory_throughput_pct,
                self.p.l1_throughput_pct,
                self.p.l2_throughput_pct,
                self.p.dram_throughput_pct,
            )
            if v is not None
        ]
        return max(vals) if vals else None


@dataclass
class Finding:
    quantity: str
    value: float
    unit: str
    gain_pct: float | None
    gain_formula: str
    levers: tuple[str, ...]
    evidence: list[tuple[str, float | str]]
    at_roof: bool = False


@dataclass
class Clear:
    reason: str


Check = Callable[[Ctx], "Finding | Clear | None"]


@dataclass(frozen=True)
class Rule:
    name: str
    title: str
    reads: tuple[str, ...]
    source: str
    check: Check


def to_cause(rule: Rule, fnd: Finding, ctx: Ctx) -> Cause:
    gain = None if fnd.gain_pct is None else round(max(0.0, min(99.0, fnd.gain_pct)), 1)
    return Cause(
        rule=rule.name,
        title=rule.title,
        quantity=fnd.quantity,
        value=round(fnd.value, 4),
        unit=fnd.unit,
        gain_pct=gain,
        gain_formula=fnd.gain_formula,
        levers=list(fnd.levers),
        at_roof=fnd.at_roof,
        evidence=[
            Evidence(
                metric=m,
                value=v,
                threshold=f"read by rule {rule.name}",
                source="kernelpilot isa (ISA facts)" if m.startswith("isa.") else ctx.where,
            )
            for m, v in fnd.evidence
        ],
        source=rule.source,
    )
