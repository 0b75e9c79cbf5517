"""Capability declarations for `profile run|parse|hotspots|att` (ncu / rocprofv3)."""

from kernelpilot.capabilities import Capability
from kernelpilot.profile.att.models import AttRequest, AttResult
from kernelpilot.profile.models import (
    HotspotsRequest,
    HotspotsResult,
    ProfileParseRequest,
    ProfileResult,
    ProfileRunRequest,
)

CAPABILITIES = [
    Capability(
        tool="profile_run",
        command=("profile", "run"),
        summary="Profile a program's kernels with ncu or rocprofv3 and return one normalized profile per "
        "launch.",
        description=(
            "Run the vendor profiler on a command (argv list) and return a KernelProfile per kernel launch: "
            "duration_ns, DRAM bytes read/written, FLOPs and FLOP/s per precision, speed-of-light %, "
            "occupancy, "
            "stalls, passes used. Default mode=roofline collects only the minimal metric set (about 11 "
            "replay "
            "passes instead of ~38 for --set full) and never touches clocks (--clock-control none). "
            "Filter with "
            "kernel_name ('regex:...'), launch_skip and launch_count; use mode=full with export=path.ncu-rep "
            "and import_source=true when you then want hotspots. Needs a GPU and counter permission "
            "(ERR_NVGPUCTRPERM gives the fix)."
        ),
        request=ProfileRunRequest,
        result=ProfileResult,
        target="kernelpilot.profile.core:profile_run",
        positional=("command",),
        read_only=False,
        long_running=True,
        takes_progress=True,
        toolset="profile",
        destructive=True,
        open_world=True,
    ),
    Capability(
        tool="profile_parse",
        command=("profile", "parse"),
        summary="Parse an ncu CSV (raw/details page), .ncu-rep or rocprofv3 CSV/JSON into normalized "
        "profiles.",
        description=(
            "Parse profiler output already on disk (no GPU needed): ncu `--csv --page raw` or `--page "
            "details`, "
            "an .ncu-rep (through `ncu --import`), rocprofv3 kernel_trace.csv, counter_collection.csv or "
            "results.json. Returns one KernelProfile per launch with units in field names, plus `missing` "
            "listing "
            "anything the input could not give (never a guessed number). Feed the result to "
            "classify_bottleneck."
        ),
        request=ProfileParseRequest,
        result=ProfileResult,
        target="kernelpilot.profile.core:profile_parse",
        positional=("path",),
    ),
    Capability(
        tool="profile_hotspots",
        command=("profile", "hotspots"),
        summary="Rank SASS lines by sampled warp stalls and map them to source file:line (ncu source page).",
        description=(
            "Read ncu's source page (`ncu --import r.ncu-rep --csv --page source --print-source cuda,sass`, "
            "profiled with --set full or the SourceCounters section, code built with -lineinfo) and list the "
            "top SASS instructions and source lines by warp-stall samples with their dominant stall reasons. "
            "Use after classify_bottleneck to find where in the code the time goes."
        ),
        request=HotspotsRequest,
        result=HotspotsResult,
        target="kernelpilot.profile.core:profile_hotspots",
        positional=("path",),
    ),
    Capability(
        tool="profile_att",
        command=("profile", "att"),
        summary="Analyse a rocprofv3 thread trace (ATT) dispatch folder: stall taxonomy, wave states, "
        "hotspots.",
        description=(
            "Read a decoded rocprofv3 --att folder (ui_output_agent_<pid>_dispatch_<n>/ with code.json, "
            "wstates*.json, occupancy.json, per-wave se*_sm*_sl*_wv*.json) and return totals (latency, "
            "stall, "
            "idle cycles, stall ratio, waves, instructions), the wave-state split "
            "(EXEC/WAIT/STALL/SLEEP), the "
            "stall taxonomy by s_waitcnt counter (vmcnt, lgkmcnt, expcnt), barriers, VMEM/LDS/SMEM issue and "
            "MFMA, a per-class breakdown, top-N hotspots by stall and by latency with disassembly "
            "context and "
            "source file:line, occupancy of the traced CU, register pressure (with a kernel_trace.csv, code "
            "object or vgprs+arch) and AMD findings with levers. No GPU needed. Capture one with "
            "profile_run profiler=rocprofv3 mode=att."
        ),
        request=AttRequest,
        result=AttResult,
        target="kernelpilot.profile.att.analysis:profile_att",
        positional=("path",),
    ),
]
