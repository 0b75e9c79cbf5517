"""Instruction classes and the stall taxonomy of AMD GCN/CDNA/RDNA mnemonics (pure string rules).

Two views, on purpose:
- `stall_bucket`: the stall taxonomy the FlyDSL profiling bundles publish (their `hotspot_analyzer.py`), kept
  compatible so figures compare across reports: an `s_waitcnt` goes to the first counter it names in the order
  vmcnt, lgkmcnt, expcnt; `MFMA/FMA` holds matrix ops *and* `v_fma*` VALU FMAs, as theirs does.
  Extended, with no
  effect on the published captures: gfx12 split counters (`s_wait_loadcnt`, `s_wait_dscnt`, ...), every `ds_*`
  op as LDS (theirs: only ds_read/ds_write), scratch loads and VMEM atomics, WMMA.
- `instruction_class`: what hardware path the instruction uses, by the ISA: `v_fma*` is VALU here,
`s_load*` is
  SMEM, branches are their own class. The published per-class table lumps SMEM and branches into SALU and
  `v_fma*` into MFMA; `published_class` maps ours onto theirs for comparison.
"""

from __future__ import annotations

BUCKET_LABELS: dict[str, str] = {
    "vmem_wait": "VMEM-wait",
    "lgkm_wait": "LDS/SMEM-wait",
    "exp_wait": "EXP-wait",
    "waitcnt": "waitcnt",
    "barrier": "barrier",
    "vmem_load": "VMEM-load",
    "vmem_store": "VMEM-store",
    "lds": "LDS",
    "smem": "SMEM",
    "mfma_fma": "MFMA/FMA",
    "other": "other",
}

_VMEM_PREFIX = ("buffer_", "global_", "flat_", "scratch_", "tbuffer_", "image_")
_MATRIX_PREFIX = ("v_mfma", "v_smfmac", "v_wmma", "v_swmmac")
_GFX12_WAIT = {
    "s_wait_loadcnt": "vmem_wait",
    "s_wait_storecnt": "vmem_wait",
    "s_wait_samplecnt": "vmem_wait",
    "s_wait_bvhcnt": "vmem_wait",
    "s_wait_loadcnt_dscnt": "vmem_wait",
    "s_wait_storecnt_dscnt": "vmem_wait",
    "s_wait_dscnt": "lgkm_wait",
    "s_wait_kmcnt": "lgkm_wait",
    "s_wait_expcnt": "exp_wait",
}


def mnemonic(isa: str) -> str:
    return isa.split(None, 1)[0].lower() if isa.strip() else ""


def is_waitcnt(op: str) -> bool:
    return op.startswith("s_waitcnt") or op in _GFX12_WAIT


def stall_bucket(isa: str) -> str:
    op = mnemonic(isa)
    if op.startswith("s_waitcnt"):
        text = isa.lower()
        if "vmcnt" in text or "vscnt" in text:
            return "vmem_wait"
        if "lgkmcnt" in text:
            return "lgkm_wait"
        if "expcnt" in text:
            return "exp_wait"
        return "waitcnt"
    if op in _GFX12_WAIT:
        return _GFX12_WAIT[op]
    if op.startswith("s_barrier") or op == "s_wait_idle":
        return "barrier"
    if op.startswith(_VMEM_PREFIX):
        if "_load" in op:
            return "vmem_load"
        if "_store" in op or "_atomic" in op:
            return "vmem_store"
        return "other"
    if op.startswith("ds_"):
        return "lds"
    if op.startswith(("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache", "s_scratch")):
        return "smem"
    if op.startswith(_MATRIX_PREFIX) or op.startswith("v_fma"):
        return "mfma_fma"
    return "other"


CLASSES = ("valu", "mfma", "salu", "smem", "branch", "vmem", "lds", "waitcnt", "barrier", "other")


def instruction_class(isa: str) -> str:
    op = mnemonic(isa)
    if is_waitcnt(op):
        return "waitcnt"
    if op.startswith("s_barrier") or op == "s_wait_idle":
        return "barrier"
    if op.startswith(_MATRIX_PREFIX):
        return "mfma"
    if op.startswith(_VMEM_PREFIX):
        return "vmem"
    if op.startswith("ds_"):
        return "lds"
    if op.startswith(("s_load", "s_buffer_load", "s_store", "s_buffer_store", "s_dcache", "s_scratch")):
        return "smem"
    if op.startswith(("s_branch", "s_cbranch", "s_setpc", "s_swappc", "s_call")):
        return "branch"
    if op.startswith("s_"):
        return "salu"
    if op.startswith("v_"):
        return "valu"
    return "other"


def published_class(isa: str) -> str:
    """The per-class grouping of the FlyDSL REPORT tables (SALU = SALU+SMEM+branch; MFMA includes v_fma*)."""
    cls = instruction_class(isa)
    if cls in ("salu", "smem", "branch"):
        return "SALU"
    if cls == "mfma" or mnemonic(isa).startswith("v_fma"):
        return "MFMA"
    return {"valu": "VALU", "vmem": "VMEM", "lds": "LDS", "waitcnt": "waitcnt", "barrier": "barrier"}.get(
        cls, cls
    )
