"""workload.join and workload.drill on what the H100 recorded (tests/fixtures/workload/join/gpu/, see its
PROVENANCE.md): the Kineto (CUPTI) names of a small transformer's steps, two Triton kernels and a CUDA .so,
with the symbols they joined to; ncu's filter behaviour; one drill's raw page."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path

import pytest

from kernelpilot.isa.models import KernelResources
from kernelpilot.workload.drill import DrillTarget, HotKernel, drill_hot
from kernelpilot.workload.join import (
    STRICT,
    LaunchFacts,
    SymbolIndex,
    join_names,
    join_with_index,
    launch_facts_from_kineto,
)
from kernelpilot.workload.names import demangle, normalize

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workload" / "join"
GPU = FIX / "gpu"
PAIRS = json.loads((GPU / "name_pairs.json").read_text())


def _kernel(symbol: str, registers: int | None, where: str) -> KernelResources:
    return KernelResources(
        name=symbol,
        demangled=symbol,
        vendor="nvidia",
        arch="sm_90",
        entry=where.rsplit(":", 1)[-1],
        registers=registers,
    )


def test_strict_pairs_join_again_to_the_same_symbol() -> None:
    """From the recorded symbols alone, every name that joined strictly on the GPU joins to the same symbol
    the same way. Kineto spells a C++ kernel exactly as GNU's demangler spells its symbol (all 40 here):
    what a plain comparison missed on the H100 was the listing cut at 2,000 of libtorch_cuda's ~36,000
    sm_90 kernels, and names other tools spell their own way (ncu: see the filter test below)."""
    strict = [p for p in PAIRS if p["join"]["matched"] and p["join"]["how"] in STRICT]
    assert len(strict) >= 20
    idx = SymbolIndex()
    for p in PAIRS:
        j = p["join"]
        if j["matched"]:
            idx.add_kernels(
                [_kernel(j["symbol"], j["registers"], j["code_object"])], j["code_object"].rsplit(":", 1)[0]
            )
        for c in p["candidates"]:
            idx.add_kernels([_kernel(c["symbol"], c["registers"], c["where"])], c["where"].rsplit(":", 1)[0])
    res = join_with_index([p["trace_name"] for p in strict], idx, {})
    for p, r in zip(strict, res, strict=True):
        assert (r.matched, r.how, r.symbol) == (True, p["join"]["how"], p["join"]["symbol"]), p["trace_name"]
    assert all(p["trace_name"] in (p["join"]["symbol"], demangle(p["join"]["symbol"])) for p in strict)
    assert sum(p["trace_name"].startswith("void ") for p in strict) >= 30


def test_joined_registers_agree_with_what_cupti_reported() -> None:
    """The cubin's register count equals CUPTI's registers per thread for 28 of the 40 joined kernels; where
    they differ CUPTI reports more (16 for the demo kernels ptxas built with 8-12), never less."""
    matched = [p for p in PAIRS if p["join"]["matched"] and p["cupti_registers_per_thread"] is not None]
    assert len(matched) == 40
    same = [p for p in matched if p["join"]["registers"] == p["cupti_registers_per_thread"]]
    assert len(same) == 28
    assert all(p["join"]["registers"] <= p["cupti_registers_per_thread"] for p in matched)


def test_anonymous_namespace_and_template_names_of_the_demo_so_join() -> None:
    demo = [p for p in PAIRS if "demo_so" in p["tags"]]
    assert len(demo) >= 5
    res = join_names([p["trace_name"] for p in demo], [FIX / "libkp_names_demo.so"], "sm_90")
    regs = {"_ZN6kpdemo10overloadedEPdi": 10, "_ZN6kpdemo10overloadedEPfi": 10, "plain_c_kernel": 8}
    for p, r in zip(demo, res, strict=True):
        assert r.matched and r.symbol == p["join"]["symbol"], p["trace_name"]
        assert r.registers == p["join"]["registers"] and r.registers == regs.get(r.symbol, r.registers)
    assert any("(anonymous namespace)" in p["trace_name"] or "<unnamed>" in p["trace_name"] for p in demo)


def test_triton_kernels_join_to_their_cached_cubins() -> None:
    tri = [p for p in PAIRS if "triton" in p["tags"]]
    assert len(tri) == 2
    cubins = sorted((GPU / "triton").glob("*.cubin"))
    res = join_names([p["trace_name"] for p in tri], cubins, "sm_90")
    for p, r in zip(tri, res, strict=True):
        assert r.matched and r.how == "exact symbol" and r.registers == p["cupti_registers_per_thread"]
        assert r.code_object is not None and r.code_object.endswith(f"{p['trace_name']}.cubin")


def _grid_steps(tag: str) -> dict[str, list[int]]:
    """kernel -> the steps its profiled launches came from (grid x = step + 1)."""
    text = (GPU / f"ncu_filter_{tag}.csv").read_text()
    rows = [r for r in csv.reader(io.StringIO(text)) if r]
    head = next(r for r in rows if r and r[0] == "ID")
    name, grid = head.index("Kernel Name"), head.index("launch__grid_size")
    out: dict[str, list[int]] = {}
    for r in rows:
        if r[0].isdigit():
            out.setdefault(r[name], []).append(int(float(r[grid].replace(",", ""))) - 1)
    return out


S1, S2 = "_ZN3kpf11step_kernelILi1EEEvPf", "_ZN3kpf11step_kernelILi2EEEvPf"
SA = "_ZN3kpf48_GLOBAL__N__2ac659c5_19_ncu_filters_demo_cu_main11anon_kernelEPf"


def test_ncu_kernel_id_counts_invocations_per_kernel_and_inside_the_region() -> None:
    """What `workload.drill` relies on, as ncu 2025.3 did it on the H100 (per step: S1 x1, S2 x3, SA x2)."""
    # invocation 7 of each kernel: S2 in step 2, SA in step 3; S1's 7th (step 6) came after the program's
    # cudaProfilerStop in step 5, which ends profiling when it starts at the beginning
    assert _grid_steps("A_mangled_inv7") == {S2: [2], SA: [3]}
    # inside a cudaProfilerStart/Stop or NVTX region, invocation 1 is each kernel's first launch there
    assert _grid_steps("B_profiler_inv1") == {S1: [5], S2: [5], SA: [5]}
    assert _grid_steps("C_nvtx_inv1") == {S1: [5], S2: [5], SA: [5]}
    # the default (function) base counts step_kernel<1> and step_kernel<2> as one kernel
    assert _grid_steps("F_function_inv7") == {"step_kernel": [1]}
    assert "cannot be specified more than once" in (GPU / "ncu_filter_D_two_ids.csv").read_text()
    e = (GPU / "ncu_filter_E_demangled_inv7.csv").read_text()
    assert "No kernels were profiled" in e and "void kpf::step_kernel<(int)1>(float *)" in e
    # ncu's demangled spelling joins to the symbol's through normalize
    assert normalize("void kpf::step_kernel<(int)1>(float *)") == normalize(S1)
    assert normalize("kpf::<unnamed>::anon_kernel(float *)") == normalize(SA)


def _fake_ncu(tmp_path: Path, csv_path: Path) -> Path:
    exe = tmp_path / "ncu"
    exe.write_text(f"#!/bin/sh\ncat '{csv_path}'\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


@pytest.mark.parametrize("with_symbols", [True, False])
def test_recorded_drill_gives_every_kernel_its_roofline_position(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_symbols: bool
) -> None:
    """The H100 drill's raw page through the drill again: the same positions, with the join's symbols
    (exact filters) or without them (own-name filters, rows told apart by demangling)."""
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path, GPU / "drill_ncu_raw.csv")))
    hot = [HotKernel.model_validate(h) for h in json.loads((GPU / "drill_hot_input.json").read_text())]
    if not with_symbols:
        hot = [h.model_copy(update={"symbol": None}) for h in hot]
    hot.append(HotKernel(name="kp_never_launched_kernel", launches_per_step=1.0))
    want = json.loads((GPU / "drill_results.json").read_text())
    got = drill_hot(DrillTarget(spec="drill_closure.py:make", workdir=str(tmp_path)), hot)
    for g, w in zip(got, want, strict=True):
        assert (g.name, g.ok, g.roof, g.bound) == (w["name"], w["ok"], w["roof"], w["bound"])
        if g.ok:
            assert g.duration_us == pytest.approx(w["duration_us"])
            assert g.pct_of_attainable == pytest.approx(w["pct_of_attainable"])
            assert g.attainable_us is not None and g.citations
    assert [g.ok for g in got] == [True] * 5 + [False]
    assert got[-1].error.startswith("kp_never_launched_kernel: no launch was profiled")


def test_kernels_no_file_holds_get_the_trace_s_launch_facts() -> None:
    """cuBLAS's nvjet GEMMs and cuDNN's runtime-compiled attention joined to no code object on the H100;
    their CUPTI launch record still gives registers, shared memory and an occupancy with its limiter."""
    lost = [p for p in PAIRS if not p["join"]["matched"]]
    assert {p["trace_name"].split("_sm")[0] for p in lost} == {"nvjet", "cudnn_generated_fort_native_sdpa"}
    facts = {
        p["trace_name"]: LaunchFacts(
            registers=p["cupti_registers_per_thread"], shared_bytes=p["cupti_shared_memory"], block=None
        )
        for p in lost
    }
    blocks = {p["trace_name"]: p["block"][0] * p["block"][1] * p["block"][2] for p in lost}
    res = join_names([p["trace_name"] for p in lost], [], "sm_90", blocks, facts)
    for p, r in zip(lost, res, strict=True):
        assert not r.matched and r.facts == "trace"
        assert r.registers == p["cupti_registers_per_thread"] and r.shared_bytes == p["cupti_shared_memory"]
        assert r.occupancy is not None and r.limiter
    cudnn = next(r for r in res if r.name.startswith("cudnn_generated_"))
    assert "compiles its runtime-fusion kernels" in cudnn.note and "no code object to read" in cudnn.note
    nvjet = next(r for r in res if r.name.startswith("nvjet_"))
    assert "outside its fatbin" in nvjet.note
    kineto = launch_facts_from_kineto(
        {"registers per thread": 168, "shared memory": 99328, "block": [384, 1, 1]}
    )
    assert kineto == LaunchFacts(registers=168, shared_bytes=99328, block=384)


GPU2 = FIX / "gpu2"


def test_own_name_filters_on_the_h100_found_every_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Second window: the 5-kernel closure drilled with no symbols at all; ncu's own-name filters on mangled
    names caught each kernel once, and demangling its rows told them apart (raw page replayed here)."""
    plan = json.loads((GPU2 / "drill_nosym_plan.json").read_text())
    assert len(plan["loose"]) == 4 and list(plan["keys"]) == ["nvjet_sm90_tst_128x128_64x6_2x1_v_bz_NNT"]
    monkeypatch.setenv("KERNELPILOT_NCU", str(_fake_ncu(tmp_path, GPU2 / "drill_nosym_ncu_raw.csv")))
    hot = [HotKernel.model_validate(h) for h in json.loads((GPU2 / "drill_nosym_input.json").read_text())]
    want = json.loads((GPU2 / "drill_nosym_results.json").read_text())
    got = drill_hot(DrillTarget(spec="drill_closure.py:make", workdir=str(tmp_path)), hot)
    assert [g.ok for g in got] == [True] * 5 == [w["ok"] for w in want]
    for g, w in zip(got, want, strict=True):
        assert g.pct_of_attainable == pytest.approx(w["pct_of_attainable"]) and g.roof == w["roof"]


def test_cublaslt_fatbin_holds_no_nvjet_kernel() -> None:
    """Why nvjet GEMMs join to no code object (workload.join.RUNTIME_COMPILED): the H100 box's probe."""
    probe = json.loads((GPU2 / "nvjet_probe.json").read_text())
    lt = next(v for k, v in probe.items() if "libcublasLt" in k)
    assert lt["kernels"] == 42200 and lt["nvjet_kernels"] == 0
    text = (GPU2 / "nvjet_probe.txt").read_text()
    assert "nvjet_sm90_%s_%dx%d" in text and ".cask_resource" in text
