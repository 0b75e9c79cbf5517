"""Registers and spills of a Triton kernel from its cache, without a GPU (issue 27, `playbooks/triton.md`).

Triton's cache metadata (`<kernel>.json`) has no register or spill counts: `compiled.n_regs`/`n_spills` exist
only on a launched kernel, from the driver. The cubin beside the metadata has them: `isa resources` reads
`REG` (= n_regs) and `STACK`, the local memory per thread (= 4 x n_spills), from a real cache recorded on an
H100 (`tests/fixtures/isa/triton/PROVENANCE.md`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.isa.api import IsaResourcesRequest
from kernelpilot.isa.core import isa_resources

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "isa" / "triton"
META = json.loads((FIX / "triton_meta.json").read_text())


def _entry(hash_: str, name: str) -> Path:
    for meta in (FIX / "cache").glob(f"*/{name}.json"):
        if json.loads(meta.read_text())["hash"] == hash_:
            return meta.parent
    raise AssertionError(f"no cache entry with hash {hash_}")


@pytest.mark.parametrize("variant", sorted(META))
def test_isa_resources_on_the_cached_cubin_gives_the_drivers_counts(variant: str) -> None:
    rec = META[variant]
    entry = _entry(rec["hash"], rec["name"])
    metadata = json.loads((entry / f"{rec['name']}.json").read_text())
    assert "n_regs" not in metadata and "n_spills" not in metadata  # why the playbook needs the cubin
    assert metadata["num_warps"] == rec["num_warps"]
    res = isa_resources(IsaResourcesRequest(file=str(entry / f"{rec['name']}.cubin"), kernel=rec["name"]))
    (k,) = res.kernels
    assert (k.name, k.arch) == (rec["name"], "sm_90")
    assert k.registers == rec["n_regs"]
    assert k.stack_frame_bytes == 4 * rec["n_spills"]
    assert k.max_threads_per_block == 32 * rec["num_warps"]


def test_the_spilling_variant_is_told_apart(run_cli) -> None:  # type: ignore[no-untyped-def]
    """As the playbook writes it: the CLI line shows the spill (STACK) of the one-warp BLOCK 16384 softmax."""
    rec = META["softmax_rows_BLOCK16384_w1"]
    cubin = _entry(rec["hash"], "softmax_rows") / "softmax_rows.cubin"
    r = run_cli("isa", "resources", str(cubin), "--kernel", "softmax_rows")
    assert r.code == 0, r.err
    assert "REG=64" in r.out and "STACK=2992" in r.out and rec["n_spills"] == 748
