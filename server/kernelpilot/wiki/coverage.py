"""Wiki coverage: which metrics the roofline and occupancy need, and which of them a GPU leaves UNKNOWN.

Owns the list of roofline-critical metrics (per vendor: NVIDIA per-SM keys, AMD per-CU keys) and the
per-GPU gap report behind `gpus --missing`, plus matching a device name (nvidia-smi / rocm-smi) to a wiki
GPU for `doctor`. It reads spec lines only (`## Measured` lines are reported separately) and never fills a
gap: a missing metric is listed, not estimated.
"""

from __future__ import annotations

from kernelpilot.wiki.core import GpuEntry, Wiki

# (what the roofline/occupancy uses it for, NVIDIA key, AMD key); the same key twice = vendor-neutral.
CRITICAL: tuple[tuple[str, str, str], ...] = (
    ("bf16 tensor/matrix peak", "bf16_dense_tflops", "bf16_dense_tflops"),
    ("fp16 tensor/matrix peak", "fp16_dense_tflops", "fp16_dense_tflops"),
    ("fp32 vector peak", "fp32_vector_tflops", "fp32_vector_tflops"),
    ("memory roof", "memory_bandwidth_tb_s", "memory_bandwidth_tb_s"),
    ("SM/CU count", "sm_count", "cu_count"),
    ("L2 size", "l2_cache_mb", "l2_cache_mb"),
    ("shared memory/LDS per SM/CU", "shared_mem_per_sm_kb", "lds_per_cu_kb"),
    ("registers per SM/CU", "register_file_per_sm_kb", "vgpr_file_per_cu_kb"),
)


# vendor -> the keys the instruction-issue floor reads (`kernelpilot.roofline.issue`): clock, SM/CU count,
# issue slots and per-pipe rates. A GPU file names those it leaves UNKNOWN, with the reason, on an
# `Issue-floor UNKNOWN: <keys>: <reason>; ...` prose line (gpu-wiki-index/README.md).
ISSUE_FLOOR: dict[str, tuple[str, ...]] = {
    "nvidia": (
        "boost_clock_mhz",
        "sm_count",
        "warp_size",
        "warp_schedulers_per_sm",
        "issue_inst_per_clk_per_scheduler",
        "fp32_results_per_clk_per_sm",
        "int32_add_results_per_clk_per_sm",
        "int32_compare_results_per_clk_per_sm",
        "int32_bitwise_results_per_clk_per_sm",
        "int32_shift_results_per_clk_per_sm",
        "warp_shuffle_results_per_clk_per_sm",
        "sfu_results_per_clk_per_sm",
        "conversion_results_per_clk_per_sm",
    ),
    "amd": (
        "boost_clock_mhz",
        "cu_count",
        "issue_inst_per_clk_per_cu",
        "valu_lanes_per_clk_per_cu",
        "transcendental_lanes_per_clk_per_cu",
        "salu_inst_per_clk_per_cu",
        "lds_inst_per_clk_per_cu",
        "vmem_inst_per_clk_per_cu",
        "branch_inst_per_clk_per_cu",
    ),
}
ISSUE_FLOOR_DECL = "Issue-floor UNKNOWN:"


def issue_floor_reasons(wiki: Wiki, entry: GpuEntry) -> dict[str, str]:
    """key -> reason from the file's `Issue-floor UNKNOWN: <keys>: <reason>; ...` line(s); {} when none."""
    out: dict[str, str] = {}
    for path in wiki.resolve_cited_files(entry.file):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if not line.startswith(ISSUE_FLOOR_DECL):
                continue
            for part in line[len(ISSUE_FLOOR_DECL) :].strip().rstrip(".").split("; "):
                keys, _, reason = part.partition(": ")
                for key in (k.strip() for k in keys.split(",")):
                    out.setdefault(key, reason.strip() or "no reason given")
    return out


# vendor -> the rates a GPU needs for a complete issue floor (the clock, the SM/CU count, the issue slots and
# the ALU, shuffle and special-function pipes), each as its alternatives: one cited line of a group is enough.
# On AMD the shuffle (ds_bpermute/ds_permute) issues to the LDS and the special-function ops are the
# transcendental VALU ops (`isa.disasm.AMD_PIPES`).
ISSUE_FLOOR_NEEDED: dict[str, tuple[tuple[str, ...], ...]] = {
    "nvidia": (
        ("boost_clock_mhz",),
        ("sm_count",),
        ("warp_schedulers_per_sm",),
        ("issue_inst_per_clk_per_scheduler",),
        (
            "int32_add_results_per_clk_per_sm",
            "int32_compare_results_per_clk_per_sm",
            "int32_bitwise_results_per_clk_per_sm",
            "int32_shift_results_per_clk_per_sm",
        ),
        ("warp_shuffle_results_per_clk_per_sm",),
        ("sfu_results_per_clk_per_sm",),
    ),
    "amd": (
        ("boost_clock_mhz",),
        ("cu_count",),
        ("issue_inst_per_clk_per_cu",),
        ("valu_lanes_per_clk_per_cu",),
        ("lds_inst_per_clk_per_cu",),
        ("transcendental_lanes_per_clk_per_cu",),
    ),
}


def missing_issue_floor(wiki: Wiki, entry: GpuEntry) -> tuple[list[str], list[str]]:
    """(the groups of `ISSUE_FLOOR_NEEDED` with no spec line, each named by its first key; the distinct
    reasons the file's `Issue-floor UNKNOWN:` line gives for them, 'not declared in the file' for one it
    does not name). `ISSUE_FLOOR` lists every key the floor reads; the report names those a floor needs."""
    groups = ISSUE_FLOOR_NEEDED.get(vendor_of(entry), ())
    absent = [g[0] for g in groups if not any(k in entry.specs for k in g)]
    if not absent:
        return [], []
    reasons = issue_floor_reasons(wiki, entry)
    every = reasons.get("every issue and pipe rate")
    why = [reasons.get(k) or every or "not declared in the file" for k in absent]
    return absent, list(dict.fromkeys(why))


def vendor_of(entry: GpuEntry) -> str:
    """'nvidia', 'amd' or '' (a user-wiki GPU without an index row: decided by its keys, else unknown)."""
    v = entry.vendor.strip().lower()
    if v in ("nvidia", "amd"):
        return v
    isa = entry.specs.get("isa_target")
    if isa is not None and isinstance(isa.value, str):
        if isa.value.startswith("gfx"):
            return "amd"
        if isa.value.startswith("sm_"):
            return "nvidia"
    if any(k in entry.specs for k in ("cu_count", "lds_per_cu_kb", "vgpr_file_per_cu_kb")):
        return "amd"
    if any(k in entry.specs for k in ("sm_count", "shared_mem_per_sm_kb", "register_file_per_sm_kb")):
        return "nvidia"
    return ""


def critical_metrics(entry: GpuEntry) -> list[str]:
    """The roofline-critical keys for this GPU's vendor ('sm_count|cu_count' when the vendor is unknown)."""
    vendor = vendor_of(entry)
    out = []
    for _why, nv, amd in CRITICAL:
        if vendor == "nvidia" or nv == amd:
            out.append(nv)
        elif vendor == "amd":
            out.append(amd)
        else:
            out.append(f"{nv}|{amd}")
    return out


def missing_critical(entry: GpuEntry) -> list[str]:
    """Roofline-critical keys with no usable spec line (absent, or in conflict between user wikis)."""
    missing = []
    for key in critical_metrics(entry):
        alternatives = key.split("|")
        if not any(k in entry.specs and not k.startswith("measured_") for k in alternatives):
            missing.append(key)
    return missing


def match_device(wiki: Wiki, device_name: str) -> tuple[str | None, list[str]]:
    """(wiki GPU id whose id/alias/title equals the device name, else None; close candidates by prefix).

    Exact matching only: a prefix match can pick a sibling with other figures (A100 40GB vs 80GB), so it is
    offered as a candidate, never taken.
    """
    exact = wiki.match_gpu_name(device_name, exact_only=True)
    if len(exact) == 1:
        return exact[0], []
    if exact:
        return None, exact
    return None, wiki.match_gpu_name(device_name)
