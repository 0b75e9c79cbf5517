"""How close a stored attempt is to one being considered: a documented, explainable score in [0, 1].

    similarity = 0.30 * operator + 0.15 * dtype + 0.15 * arch + 0.40 * change

- operator, dtype: 1.0 when equal (case-insensitive), else the Jaccard overlap of their word tokens
  (so `gemm_bf16` vs `gemm` scores 0.5); 0 when either side is unknown (empty).
- arch: 1.0 when the arch is equal, or (if an arch is missing) the GPU id is equal; 0.5 when one arch
  names a variant of the other (`sm_90a` vs `sm_90`); else 0.
- change: Jaccard overlap of the word tokens of the proposed change and of the stored summary's
  "<what>" part, stop words removed.
Weights of the components that the query leaves out are dropped and the rest renormalised, so a
query with only a change description still ranks on 0..1. Each match carries its components, so an
agent sees why a record came back.
"""

from __future__ import annotations

from pydantic import BaseModel

from kernelpilot.experiments.record import ExperimentRecord
from kernelpilot.experiments.store import text_tokens

WEIGHTS = {"operator": 0.30, "dtype": 0.15, "arch": 0.15, "change": 0.40}
_STOP = "a an and as at by for from in into of on or the to with use using via per than then"
STOP_WORDS = frozenset(_STOP.split(" "))


class Components(BaseModel):
    operator: float | None = None
    dtype: float | None = None
    arch: float | None = None
    change: float | None = None


def change_tokens(text: str) -> set[str]:
    return {t for t in text_tokens(text) if t not in STOP_WORDS}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _field_sim(query: str, stored: str) -> float:
    if not query or not stored:
        return 0.0
    if query.lower() == stored.lower():
        return 1.0
    return jaccard(set(text_tokens(query)), set(text_tokens(stored)))


def _arch_sim(arch: str, gpu: str, rec: ExperimentRecord) -> float:
    if arch and rec.arch:
        a, b = arch.lower(), rec.arch.lower()
        if a == b:
            return 1.0
        if a.startswith(b) or b.startswith(a):
            return 0.5
        return 0.0
    if gpu and rec.gpu and gpu.lower() == rec.gpu.lower():
        return 1.0
    return 0.0


def score(
    rec: ExperimentRecord, operator: str, dtype: str, arch: str, gpu: str, change: str
) -> tuple[float, Components]:
    """Similarity of `rec` to the query, with the per-component values."""
    comps = Components()
    if operator:
        comps.operator = _field_sim(operator, rec.operator)
    if dtype:
        comps.dtype = _field_sim(dtype, rec.dtype)
    if arch or gpu:
        comps.arch = _arch_sim(arch, gpu, rec)
    if change:
        comps.change = jaccard(change_tokens(change), change_tokens(rec.what()))
    total_w = 0.0
    total = 0.0
    for name, w in WEIGHTS.items():
        value = getattr(comps, name)
        if value is not None:
            total_w += w
            total += w * value
    return (round(total / total_w, 4) if total_w else 0.0), comps
