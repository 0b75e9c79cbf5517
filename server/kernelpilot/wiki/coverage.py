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
