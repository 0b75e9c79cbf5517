"""ISA facts for the rules: accept a flat facts object, or the JSON of `kernelpilot isa fit` /
`isa resources`, and reduce it to the keys the rules read (registers, stack frame, spill bytes, widest
global load, tensor/matrix instructions, occupancy limiter and next step) for one kernel."""

from __future__ import annotations

import re
from typing import Any


def _from_fit(rep: dict[str, Any]) -> dict[str, object]:
    out: dict[str, object] = {}
    occ = rep.get("occupancy") or {}
    if occ:
        out["occupancy_pct"] = occ.get("occupancy_pct")
        out["occupancy_limiter"] = occ.get("limiter")
        out["occupancy_resident_blocks"] = occ.get("resident_blocks")
        steps = [s.get("change", "") + " -> " + s.get("gives", "") for s in occ.get("next_step") or []]
        if steps:
            out["occupancy_next_step"] = steps[0]
    if rep.get("not_checked"):  # isa fit ran without a disassembler: its mix-based checks did not run
        out["isa_not_checked"] = [str(x).split(":")[0] for x in rep["not_checked"]]
    mix = rep.get("mix") or {}
    if mix:
        bits = [int(b) for b in (mix.get("global_load_bits") or {})]
        if bits:
            out["widest_load_bits"] = max(bits)
        fam = mix.get("families") or {}
        out["tensor_ops"] = int(fam.get("matrix", 0))
        out["local_instructions"] = int(fam.get("local", 0))
        shfl = fam.get("shuffle", (mix.get("top_opcodes") or {}).get("SHFL"))
        if isinstance(shfl, int) and isinstance(mix.get("instructions"), int):
            out["shuffles"], out["instructions"] = shfl, mix["instructions"]  # rules.issue: shuffle_chain
    return out


def _from_resources(k: dict[str, Any]) -> dict[str, object]:
    keys = ("registers", "stack_frame_bytes", "spill_store_bytes", "spill_load_bytes", "vendor", "arch")
    return {x: k[x] for x in keys if k.get(x) is not None}


def _pick(items: list[Any], kernel: str) -> dict[str, Any]:
    named = [
        x
        for x in items
        if isinstance(x, dict) and kernel and kernel in (x.get("kernel"), x.get("demangled"), x.get("name"))
    ]
    if named:
        return dict(named[0])
    if len(items) == 1 and isinstance(items[0], dict):
        return dict(items[0])
    return {}


_STACK = re.compile(r"stack frame (\d+) B")
_SPILLS = re.compile(r"spills\s+(\d+) B stores / (\d+) B loads")
_REGS = re.compile(r"registers\s+(\d+)/thread")
_AMD_SPILLS = re.compile(r"spills\s+VGPR (\d+), SGPR (\d+); scratch (\d+) B/lane")
_AMD_REGS = re.compile(r"registers\s+VGPR (\d+) AGPR (\d+)")


def _fit_text(text: str) -> dict[str, object]:
    """Facts that `isa fit` prints but does not carry as fields (its text is kernelpilot's own format)."""
    out: dict[str, object] = {}
    for rx, keys in (
        (_STACK, ("stack_frame_bytes",)),
        (_SPILLS, ("spill_store_bytes", "spill_load_bytes")),
        (_REGS, ("registers",)),
        (_AMD_SPILLS, ("vgpr_spills", "sgpr_spills", "stack_frame_bytes")),
        (_AMD_REGS, ("registers", "agprs")),
    ):
        m = rx.search(text)
        if m:
            out.update({k: int(v) for k, v in zip(keys, m.groups(), strict=True)})
    return out


def _one(doc: Any, kernel: str) -> dict[str, object]:
    if isinstance(doc, dict) and isinstance(doc.get("reports"), list):  # isa fit --json
        rep = _pick(doc["reports"], kernel)
        return {**_fit_text(str(rep.get("text", ""))), **_from_fit(rep)}
    if isinstance(doc, dict) and isinstance(doc.get("kernels"), list):  # isa resources --json
        return _from_resources(_pick(doc["kernels"], kernel))
    if isinstance(doc, list):
        return _pick(doc, kernel)
    if isinstance(doc, dict) and kernel and isinstance(doc.get(kernel), dict):
        return dict(doc[kernel])
    return dict(doc) if isinstance(doc, dict) else {}


def normalize(doc: Any, kernel: str) -> dict[str, object]:
    """Facts for `kernel` from a flat object, {kernel: facts}, a list of facts, isa fit / isa resources
    JSON, or a list of such tool outputs (merged, later ones win)."""
    if (
        isinstance(doc, list)
        and doc
        and all(isinstance(d, dict) and ("reports" in d or "kernels" in d) for d in doc)
    ):
        merged: dict[str, object] = {}
        for d in doc:
            merged.update(_one(d, kernel))
        return merged
    return _one(doc, kernel)
