"""The instruction-issue floor: how long a kernel's own warp instructions take at the cited issue rates.

A kernel that is neither FLOP- nor byte-bound (top-k gating, shuffle reductions, RoPE) is bound by the
instructions its warps must issue. Every SM has `warp_schedulers_per_sm` schedulers, each issuing
`issue_inst_per_clk_per_scheduler` warp instructions per clock, and pipes with their own rates (the CUDA
throughput table's results per clock per SM / `warp_size`). At the boost clock (`boost_clock_mhz`, the
fastest the SM runs, so the floor stays a lower bound):

    issue floor = max over {issue, each pipe class} of
                  warp instructions / (rate per SM per clock x sm_count x clock)

The counts come from the code object (static: `isa mix` per-warp counts x warps launched x `trip`) or from
ncu (measured: `smsp__inst_executed.sum` and `sm__inst_executed_pipe_<pipe>.sum` of a raw page). Static
counts hold each loop body once: with backward branches the static floor is a lower bound unless `trip`
says how often the body runs. Every rate is a wiki line, cited; a missing one is UNKNOWN, never guessed.

AMD (a GPU with `cu_count`): the counts come from the HSACO's llvm-objdump text (`isa.disasm.AMD_PIPES`:
valu, trans, salu, lds, vmem, branch per wave) and the rates are per CU: `issue_inst_per_clk_per_cu` and the
per-category `<class>_inst_per_clk_per_cu` lines are wave instructions per clock; `valu_lanes_per_clk_per_cu`
and `transcendental_lanes_per_clk_per_cu` are work-item lanes per clock, divided by the kernel's wave size
(32 or 64, from the code object; a wave64 instruction takes twice the lanes of a wave32 one).
"""

from __future__ import annotations

import math
import re

from kernelpilot.foundation.errors import InvalidArgumentError, UnknownSpecError
from kernelpilot.foundation.validation import require_file
from kernelpilot.isa.occupancy_models import KernelMixModel
from kernelpilot.roofline.models import Ceiling, IssueFloor, PipeFloor, RooflineRequest
from kernelpilot.wiki.core import Wiki
from kernelpilot.wiki.models import UNKNOWN_TEXT, CitedValue

ISSUE = "issue"
# pipe class -> wiki keys of its members' rates (results per clock per SM); the class runs at the fastest
PIPE_RATE_KEYS: dict[str, tuple[str, ...]] = {
    "fma": ("fp32_results_per_clk_per_sm",),
    "alu": (
        "int32_add_results_per_clk_per_sm",
        "int32_compare_results_per_clk_per_sm",
        "int32_bitwise_results_per_clk_per_sm",
        "int32_shift_results_per_clk_per_sm",
    ),
    "shuffle": ("warp_shuffle_results_per_clk_per_sm",),
    "xu": ("sfu_results_per_clk_per_sm", "conversion_results_per_clk_per_sm"),
}
# ncu pipe (KernelProfile.pipes) -> pipe class; ncu's lsu pipe mixes shuffles with memory, so it maps to none
NCU_PIPE_CLASS = {"fma": "fma", "alu": "alu", "xu": "xu", "shfl": "shuffle"}


# AMD class -> wiki key of its rate, in wave instructions per clock per CU, or lanes per clock per CU (÷ wave)
AMD_INST_KEYS: dict[str, str] = {
    ISSUE: "issue_inst_per_clk_per_cu",
    "salu": "salu_inst_per_clk_per_cu",
    "lds": "lds_inst_per_clk_per_cu",
    "vmem": "vmem_inst_per_clk_per_cu",
    "branch": "branch_inst_per_clk_per_cu",
}
AMD_LANE_KEYS: dict[str, str] = {
    "valu": "valu_lanes_per_clk_per_cu",
    "trans": "transcendental_lanes_per_clk_per_cu",
}


def _need(wiki: Wiki, gpu_id: str, metric: str) -> CitedValue:
    cv = wiki.get(gpu_id, metric)
    if cv is None:
        raise UnknownSpecError(
            f"{UNKNOWN_TEXT}: {metric} for {gpu_id} (needed for the instruction-issue floor); "
            "roofline refuses to guess it",
            f"add a cited line `- {metric}: <value> <unit> | source: ...` to a user wiki (--wiki DIR); "
            "`kernelpilot gpus --missing` lists the issue-floor lines each bundled GPU lacks",
        )
    return cv


def is_amd(wiki: Wiki, gpu_id: str) -> bool:
    """AMD rates are per CU: a GPU with a cu_count line and no sm_count line."""
    return wiki.get(gpu_id, "cu_count") is not None and wiki.get(gpu_id, "sm_count") is None


class IssueRates:
    """Cited per-SM (NVIDIA) or per-CU (AMD) issue and pipe rates of one GPU, in warp (wave) instructions per
    clock per SM/CU. `wave` is the kernel's wave size on AMD (None: the wiki's wavefront_size line)."""

    def __init__(self, wiki: Wiki, gpu_id: str, wave: int | None = None) -> None:
        self.per_sm: dict[str, tuple[float, list[CitedValue]]] = {}
        self.amd = is_amd(wiki, gpu_id)
        self.wave_note = ""
        if self.amd:
            self._amd(wiki, gpu_id, wave)
            return
        self.sm = _need(wiki, gpu_id, "sm_count")
        self.clock = _need(wiki, gpu_id, "boost_clock_mhz")
        self.warp = _need(wiki, gpu_id, "warp_size")
        sched = _need(wiki, gpu_id, "warp_schedulers_per_sm")
        per = _need(wiki, gpu_id, "issue_inst_per_clk_per_scheduler")
        self.per_sm[ISSUE] = (sched.number() * per.number(), [sched, per])
        for pipe, keys in PIPE_RATE_KEYS.items():
            cvs = [cv for k in keys if (cv := wiki.get(gpu_id, k)) is not None]
            if cvs:
                best = max(cvs, key=lambda c: c.number())
                self.per_sm[pipe] = (best.number() / self.warp.number(), [best, self.warp])

    def _amd(self, wiki: Wiki, gpu_id: str, wave: int | None) -> None:
        """Per-CU rates: instruction-rate lines as they are, lane-rate lines over the wave size."""
        self.sm = _need(wiki, gpu_id, "cu_count")
        self.clock = _need(wiki, gpu_id, "boost_clock_mhz")
        for pipe, key in AMD_INST_KEYS.items():
            if (cv := wiki.get(gpu_id, key)) is not None:
                self.per_sm[pipe] = (cv.number(), [cv])
        lanes = {p: cv for p, k in AMD_LANE_KEYS.items() if (cv := wiki.get(gpu_id, k)) is not None}
        if lanes:
            size: CitedValue | None = None if wave else _need(wiki, gpu_id, "wavefront_size")
            width = float(wave) if wave else (size.number() if size else 0.0)
            self.wave_note = "" if size else f" / wave size {wave} (the kernel's code object)"
            for pipe, cv in lanes.items():
                self.per_sm[pipe] = (cv.number() / width, [cv, size] if size else [cv])
        if not self.per_sm:
            keys = [*AMD_INST_KEYS.values(), *AMD_LANE_KEYS.values()]
            raise UnknownSpecError(
                f"{UNKNOWN_TEXT}: no issue or pipe rate for {gpu_id} (the instruction-issue floor needs one "
                f"of {', '.join(keys)}); roofline refuses to guess it",
                "add a cited line to a user wiki (--wiki DIR); `kernelpilot gpus --missing` lists the gaps",
            )

    def inst_per_s(self, pipe: str) -> float:
        return self.per_sm[pipe][0] * self.sm.number() * self.clock.number() * 1e6

    def citations(self, pipes: list[str]) -> list[str]:
        """Each wiki line behind these pipes' rates, once, in the order first used."""
        out: list[str] = []
        for pipe in pipes:
            for cv in [*self.per_sm[pipe][1], self.sm, self.clock]:
                if cv.citation() not in out:
                    out.append(cv.citation())
        return out

    def ceiling(self, pipe: str) -> Ceiling:
        """The issue roof of one pipe as a stop-verdict ceiling (spec rates: never a measured ceiling)."""
        return Ceiling(
            metric=f"{pipe}_issue_rate",
            value=self.inst_per_s(pipe) / 1e9,
            unit="Ginst/s",
            citation=self.citation(pipe),
            measured=False,
        )

    def citation(self, pipe: str) -> str:
        """How the rate is built, each factor a wiki citation (the audit checks each one)."""
        rate, cvs = self.per_sm[pipe]
        parts = (
            " / ".join(c.citation() for c in cvs) if pipe != ISSUE else " x ".join(c.citation() for c in cvs)
        )
        sm, clock = self.sm.citation(), self.clock.citation()
        if pipe in AMD_LANE_KEYS and self.amd:
            parts += self.wave_note
        unit = "wave inst/clk/CU" if self.amd else "warp inst/clk/SM"
        return f"{pipe} rate {rate:g} {unit} ({parts}) x {sm} x {clock}"


def floor_from_counts(
    rates: IssueRates, counts: dict[str, float], source: str, what: str, lower_bound: str | None
) -> IssueFloor:
    """The floor of one set of warp-instruction counts (`issue` = every instruction, plus pipe classes)."""
    pipes: list[PipeFloor] = []
    for pipe, n in counts.items():
        if pipe not in rates.per_sm or n <= 0:
            continue
        t_us = n / rates.inst_per_s(pipe) * 1e6
        pipes.append(
            PipeFloor(
                pipe=pipe,
                warp_instructions=n,
                rate_inst_per_clk_per_sm=rates.per_sm[pipe][0],
                time_us=t_us,
                citation=rates.citation(pipe),
            )
        )
    if not pipes:
        raise InvalidArgumentError(
            f"{what}: no instruction counts to floor", "check the code object or profile"
        )
    pipes.sort(key=lambda p: -p.time_us)
    return IssueFloor(
        source="static" if source == "static" else "measured",
        what=what,
        sm_count=int(rates.sm.number()),
        unit="CU" if rates.amd else "SM",
        clock_mhz=rates.clock.number(),
        pipes=pipes,
        binding=pipes[0].pipe,
        time_us=pipes[0].time_us,
        lower_bound=lower_bound,
        citations=rates.citations([p.pipe for p in pipes]),
    )


def _warps(req: RooflineRequest, wave: int) -> tuple[float, str]:
    if not req.grid or not req.block:
        raise InvalidArgumentError(
            "--isa needs the launch: --grid (blocks, e.g. 65536 or 512,1,1) and --block (threads per block)",
            "give the grid and block of the launch (Triton: block = num_warps x 32)",
        )
    if any(d <= 0 for d in [*req.grid, *req.block]) or not req.trip > 0:
        raise InvalidArgumentError("--grid, --block and --trip must be positive", "give the launch's sizes")
    blocks = math.prod(req.grid)
    warps_per_block = math.ceil(math.prod(req.block) / wave)
    unit = "warps" if wave == 32 else f"wave{wave}s"
    return blocks * warps_per_block * req.trip, (
        f"{blocks} blocks x {warps_per_block} {unit} x trip {req.trip:g}"
    )


def _one_kernel(req: RooflineRequest) -> KernelMixModel:
    """The one kernel of `--isa` with issue counts (SASS or AMDGCN), else a typed error naming the matches."""
    from kernelpilot.isa.api import IsaFileRequest
    from kernelpilot.isa.core import isa_mix

    assert req.isa is not None
    mix = isa_mix(IsaFileRequest(file=req.isa, kernel=req.isa_kernel, arch=req.isa_arch))
    ks = [k for k in mix.kernels if k.issued_instructions is not None]
    if len(ks) != 1:
        names = ", ".join(k.kernel for k in ks[:10]) or "none with a disassembly"
        raise InvalidArgumentError(
            f"--isa {req.isa}: {len(ks)} kernels match (need exactly one): {names}",
            "pick one with --isa-kernel REGEX (and --isa-arch sm_90 or gfx942 for a fatbin or bundle)",
        )
    return ks[0]


def _branch_notes(k: KernelMixModel) -> str | None:
    counted = "--ncu-csv counts what ran" if k.wavefront_size is None else "a profile counts what ran"
    notes = []
    if k.backward_branches:
        notes.append(
            f"{k.backward_branches} backward branch(es) (loops): the static count holds each loop body "
            "once, so this floor is a lower bound; give --trip (times the counted code runs per warp) "
            "when the whole body repeats"
        )
    if k.forward_branches:
        notes.append(
            f"{k.forward_branches} predicated forward branch(es): code a warp may skip is counted, so this "
            f"floor can overstate what ran; {counted}"
        )
    return "; ".join(notes) or None


def static_floor(req: RooflineRequest, wiki: Wiki, gpu_id: str) -> tuple[IssueFloor, IssueRates]:
    """Floor from the code object: per-warp (per-wave) static counts (`isa mix`) x warps launched x trip."""
    k = _one_kernel(req)
    wave = k.wavefront_size or 32
    rates = IssueRates(wiki, gpu_id, wave=k.wavefront_size)
    if k.wavefront_size is not None and not rates.amd:
        raise InvalidArgumentError(
            f"--isa {req.isa}: {k.kernel} is an AMD code object ({k.arch}) but {gpu_id} is not an AMD GPU",
            "give --gpu an AMD GPU of that architecture (e.g. MI300X for gfx942)",
        )
    if k.wavefront_size is None and rates.amd:
        raise InvalidArgumentError(
            f"--isa {req.isa}: {k.kernel} is NVIDIA SASS ({k.arch}) but {gpu_id} is an AMD GPU",
            "give --gpu an NVIDIA GPU of that architecture (e.g. H100 for sm_90)",
        )
    warps, how = _warps(req, wave)
    assert k.issued_instructions is not None
    counts = {ISSUE: k.issued_instructions * warps}
    counts.update({p: n * warps for p, n in k.pipe_classes.items()})
    warp = "warp" if k.wavefront_size is None else "wave"
    what = (
        f"static: isa mix of {k.kernel} ({k.arch}): {k.issued_instructions} instr per {warp} pass "
        f"x {how} = {counts[ISSUE]:.4g} {warp} instructions"
    )
    return floor_from_counts(rates, counts, "static", what, _branch_notes(k)), rates


def measured_floor(req: RooflineRequest, wiki: Wiki, gpu_id: str) -> tuple[IssueFloor, IssueRates]:
    """Floor from ncu's counters of one launch (raw page): smsp__inst_executed.sum and per-pipe sums."""
    from kernelpilot.profile.ncu_csv import parse_raw, read_text
    from kernelpilot.profile.normalize import profile_from_raw

    assert req.ncu_csv is not None
    rates = IssueRates(wiki, gpu_id)
    if rates.amd:
        raise InvalidArgumentError(
            f"--ncu-csv {req.ncu_csv}: ncu counters are NVIDIA's, and {gpu_id} is an AMD GPU",
            "use --isa with the kernel's HSACO for the AMD issue floor",
        )
    require_file(req.ncu_csv, "--ncu-csv", "give an `ncu --csv --page raw` file")
    page = parse_raw(read_text(req.ncu_csv), req.ncu_csv)
    pat = re.compile(req.ncu_kernel) if req.ncu_kernel else None
    launches = [k for k in page.kernels if pat is None or pat.search(k.kernel)]
    if not launches:
        raise InvalidArgumentError(
            f"--ncu-csv {req.ncu_csv}: no launch matches --ncu-kernel {req.ncu_kernel!r}",
            "launches here: " + ", ".join(sorted({k.kernel for k in page.kernels})[:10]),
        )
    p = profile_from_raw(launches[-1])
    if p.inst_executed is None:
        raise InvalidArgumentError(
            f"--ncu-csv {req.ncu_csv}: no smsp__inst_executed.sum for {p.kernel}",
            "profile with --set full (or add --metrics smsp__inst_executed.sum)",
        )
    counts = {ISSUE: p.inst_executed}
    for u in p.pipes:
        cls = NCU_PIPE_CLASS.get(u.pipe)
        if cls is not None and u.inst_executed is not None:
            counts[cls] = u.inst_executed
    got = ", ".join(f"{k}={v:.4g}" for k, v in counts.items())
    what = f"measured: ncu launch {p.launch_id} of {p.kernel}: {got} warp instructions"
    return floor_from_counts(rates, counts, "measured", what, None), rates


def issue_floors(
    req: RooflineRequest, wiki: Wiki, gpu_id: str
) -> tuple[list[IssueFloor], tuple[Ceiling, float] | None]:
    """The static and/or measured issue floors the request asks for, and the issue roof of the stop verdict:
    (ceiling of the binding pipe, its warp instructions), from the measured floor when there is one (it
    counts what ran), else the static one. ([], None) when the request gives neither --isa nor --ncu-csv."""
    if req.isa is None and req.ncu_csv is None:
        return [], None
    out: list[IssueFloor] = []
    rates: IssueRates | None = None
    if req.isa is not None:
        floor, rates = static_floor(req, wiki, gpu_id)
        out.append(floor)
    if req.ncu_csv is not None:
        floor, rates = measured_floor(req, wiki, gpu_id)
        out.append(floor)
    assert rates is not None
    used = out[-1]
    return out, (rates.ceiling(used.binding), used.pipes[0].warp_instructions)
