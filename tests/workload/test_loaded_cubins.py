"""The cubins a step loads at run time (workload/loaded_cubins.py): from CUPTI's MODULE_LOADED callback to
files the join reads, and the run's code-object share.

No GPU here: the callback's data is a real `CUpti_ModuleResourceData` layout in a ctypes buffer pointing at
REAL sm_90 cubins compiled with nvcc (tests/fixtures/workload/cupti/, PROVENANCE.md), handed to the recorder
through a stand-in for cupti-python's `subscribe`/`enable_callback` (the hardware edge)."""

from __future__ import annotations

import ctypes
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kernelpilot.workload import capture, core, drill, loaded_cubins
from kernelpilot.workload.join import LaunchFacts, join_names, with_origins
from kernelpilot.workload.loaded_cubins import (
    EXIT_NO_CUPTI,
    EXTRA,
    MISSING_NOTE,
    ORIGIN,
    CubinCapture,
    LoadedImage,
    ModuleRecorder,
    ModuleResourceData,
    add_to_meta,
    capture_loaded_cubins,
    image_from_resource,
    needles,
    write_images,
)
from kernelpilot.workload.models import WorkloadRunRequest
from kernelpilot.workload.readers.kineto import read_kineto

FIX = Path(__file__).parents[1] / "fixtures" / "workload" / "cupti"
RUNTIME = FIX / "runtime_kernels.sm_90.cubin"
OTHER = FIX / "other_kernel.sm_90.cubin"
FATBIN = FIX / "runtime_kernels.sm_90.fatbin"
CXX_CUBIN = FIX / "cxx_kernel.sm_90.cubin"
NVJET = "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT"
CUDNN = (
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64_4x1x1_cga1x1x1_kernel0_0"
)
CXX = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int, float*)"


def _ptxas(kernel: str) -> tuple[int, int]:
    """(registers, static shared bytes) ptxas printed for `kernel` when the fixture was compiled."""
    text = (FIX / "ptxas_runtime_kernels.txt").read_text()
    block = text.split(f"Function properties for {kernel}\n", 1)[1]
    m = re.search(r"Used (\d+) registers(?:, used \d+ barriers)?(?:, (\d+) bytes smem)?", block)
    assert m is not None
    return int(m.group(1)), int(m.group(2) or 0)


class _Loaded:
    """What the driver holds while the callback runs: the cubin bytes and the record pointing at them."""

    def __init__(self, path: Path | None, module_id: int) -> None:
        data = path.read_bytes() if path else b""
        self.buf = ctypes.create_string_buffer(data, len(data)) if data else None
        ptr = ctypes.cast(self.buf, ctypes.c_void_p).value if self.buf is not None else None
        self.rec = ModuleResourceData(module_id, len(data), ptr)
        # cupti-python's ResourceData: resource_descriptor is the address of the module record
        self.cbdata = SimpleNamespace(resource_descriptor=ctypes.addressof(self.rec), context=1)


class _FakeCupti:
    """cupti-python's `cupti.cupti` surface the recorder uses; `load` plays the driver loading a module."""

    CallbackDomain = SimpleNamespace(RESOURCE=3)  # cupti-python 13.4's values
    CallbackIdResource = SimpleNamespace(MODULE_LOADED=6)

    def __init__(self) -> None:
        self.callback: Any = None
        self.enabled: list[tuple[int, int, int, int]] = []
        self.unsubscribed: list[int] = []

    def subscribe(self, callback: Any, userdata: Any) -> int:
        self.callback = callback
        return 77

    def enable_callback(self, enable: int, subscriber: int, domain: int, cbid: int) -> None:
        self.enabled.append((enable, subscriber, domain, cbid))

    def unsubscribe(self, subscriber: int) -> None:
        self.unsubscribed.append(subscriber)
        self.callback = None

    def load(self, module: _Loaded) -> None:
        if self.callback is not None:
            self.callback(None, 3, 6, module.cbdata)


def test_the_record_gives_the_cubin_bytes():
    mod = _Loaded(RUNTIME, 12)
    img = image_from_resource(mod.cbdata)
    assert img is not None and img.module_id == 12 and img.data == RUNTIME.read_bytes()
    # a binding that hands over the address of CUpti_ResourceData instead
    outer = loaded_cubins.ResourceData(None, None, ctypes.addressof(mod.rec))
    assert image_from_resource(ctypes.addressof(outer)) == img
    assert image_from_resource(SimpleNamespace(resource_descriptor=0)) is None
    assert image_from_resource(object()) is None
    assert image_from_resource(_Loaded(None, 3).cbdata) is None  # a record without a cubin


def test_the_recorder_subscribes_and_keeps_each_image_once():
    cupti = _FakeCupti()
    rec = ModuleRecorder()
    rec.start(cupti)
    assert cupti.enabled == [(1, 77, 3, 6)]
    mods = [_Loaded(RUNTIME, 1), _Loaded(OTHER, 2), _Loaded(RUNTIME, 5), _Loaded(None, 6)]
    for m in mods:
        cupti.load(m)
    rec.stop(cupti)
    cupti.load(_Loaded(OTHER, 9))  # after stop: not seen
    assert cupti.unsubscribed == [77]
    assert rec.callbacks == 4 and rec.unreadable == 1
    assert [(i.module_id, len(i.data)) for i in rec.images] == [
        (1, RUNTIME.stat().st_size),
        (2, OTHER.stat().st_size),
    ]


def test_only_modules_holding_a_traced_kernel_are_written(tmp_path: Path):
    images = [
        LoadedImage(1, RUNTIME.read_bytes()),
        LoadedImage(2, OTHER.read_bytes()),
        LoadedImage(3, b"\x7fELF but cut short"),
        LoadedImage(4, FATBIN.read_bytes()),
    ]
    listing, notes = write_images(images, tmp_path / "a", [NVJET, CXX])
    assert [e["module_id"] for e in listing] == [1, 4]
    written = [Path(e["path"]) for e in listing]
    assert written[0].read_bytes() == RUNTIME.read_bytes() and written[0].suffix == ".cubin"
    assert written[1].read_bytes() == FATBIN.read_bytes() and written[1].suffix == ".fatbin"
    assert notes == ["1 loaded module(s) were neither ELF cubins nor fatbins and were not kept"]
    everything, _ = write_images(images, tmp_path / "b", None)
    assert [e["module_id"] for e in everything] == [1, 2, 4]
    small, notes = write_images(images, tmp_path / "c", None, max_bytes=OTHER.stat().st_size)
    assert [e["module_id"] for e in small] == [2]
    assert any("left out" in n for n in notes)


def test_a_cplusplus_kernel_selects_its_module_by_its_itanium_identifier(tmp_path: Path):
    cxx = "void kp::scale_kernel<float>(float*, float, int)"
    assert b"12scale_kernel" in needles([cxx])
    listing, _ = write_images([LoadedImage(1, CXX_CUBIN.read_bytes())], tmp_path, [cxx])
    assert len(listing) == 1
    assert write_images([LoadedImage(1, CXX_CUBIN.read_bytes())], tmp_path / "n", [NVJET])[0] == []


def test_the_join_reads_captured_cubins_as_code_objects(tmp_path: Path):
    listing, _ = write_images([LoadedImage(7, RUNTIME.read_bytes())], tmp_path, [NVJET, CUDNN])
    path = listing[0]["path"]
    launch = {NVJET: LaunchFacts(registers=64, shared_bytes=4096, block=128)}
    joined = with_origins(
        join_names([NVJET, CUDNN], [Path(path)], "sm_90", {CUDNN: 256}, launch), {path: ORIGIN}
    )
    nvjet, cudnn = joined
    regs, smem = _ptxas(NVJET)
    assert (regs, smem) == (64, 4096)
    assert nvjet.matched and nvjet.how == "exact symbol" and nvjet.facts == "code object"
    assert nvjet.origin == ORIGIN and nvjet.code_object and nvjet.code_object.startswith(path + ":")
    assert nvjet.registers == regs and nvjet.shared_bytes == smem and nvjet.arch == "sm_90"
    assert nvjet.occupancy and nvjet.occupancy.endswith("at block 128") and nvjet.limiter
    assert "stack frame 0 B" in nvjet.note  # a cubin records the frame, not ptxas's spill counts
    assert cudnn.facts == "code object" and cudnn.registers == _ptxas(CUDNN)[0] and cudnn.shared_bytes == 0


def test_dynamic_shared_memory_from_the_launch_record_counts_in_the_occupancy():
    """nvjet kernels take their tiles as dynamic shared memory (the H100 decode run's launch records: 164,308
    B for a 4,096 B-static-like kernel), which no code object declares."""
    dyn = 160_000
    launch = {NVJET: LaunchFacts(registers=64, shared_bytes=4096 + dyn, block=128)}
    (j,) = join_names([NVJET], [RUNTIME], "sm_90", None, launch)
    assert j.facts == "code object" and j.shared_bytes == 4096 and j.dynamic_shared_bytes == dyn
    assert j.limiter == "shared_memory" and j.occupancy and j.occupancy.startswith("6.2% (4/64 warps/SM)")
    assert f"{dyn} B dynamic shared memory" in j.note
    (static,) = join_names([NVJET], [RUNTIME], "sm_90", None, {NVJET: LaunchFacts(shared_bytes=4096)})
    assert static.dynamic_shared_bytes is None and static.limiter == "registers"


def test_the_join_reads_a_captured_fatbin(tmp_path: Path):
    listing, _ = write_images([LoadedImage(8, FATBIN.read_bytes())], tmp_path, [NVJET])
    (j,) = join_names([NVJET], [Path(listing[0]["path"])], "sm_90", {NVJET: 128})
    assert j.facts == "code object" and j.registers == 64 and j.shared_bytes == 4096


def test_without_the_captured_cubin_nvjet_falls_back_to_the_launch_record():
    launch = {NVJET: LaunchFacts(registers=64, shared_bytes=4096, block=128)}
    (j,) = join_names([NVJET], [OTHER], "sm_90", None, launch)
    assert not j.matched and j.facts == "trace" and j.registers == 64 and j.origin is None
    assert "outside its fatbin" in j.note and "no spills" in j.note


def test_missing_cupti_python_is_a_note_not_an_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setitem(sys.modules, "cupti", None)  # import cupti raises ImportError
    cap = capture_loaded_cubins("step.py:make", ".", {}, [NVJET], tmp_path, 30.0)
    assert cap.files == [] and cap.notes == [MISSING_NOTE] and EXTRA in MISSING_NOTE
    assert not (tmp_path / "names.json").exists()  # no child was started
    # the child says the same when started where the binding is missing
    assert loaded_cubins.main(["step.py:make", "--out", str(tmp_path)]) == EXIT_NO_CUPTI


def test_captured_files_go_first_with_their_origin():
    meta: dict[str, Any] = {"code_objects": ["/l/libtorch_cuda.so", "/t/a.cubin"]}
    add_to_meta(meta, CubinCapture(["/t/a.cubin", "/c/m1.cubin"], ["n"], 3))
    assert meta["code_objects"] == ["/t/a.cubin", "/c/m1.cubin", "/l/libtorch_cuda.so"]
    assert meta["code_object_origins"] == {"/t/a.cubin": ORIGIN, "/c/m1.cubin": ORIGIN}
    assert meta["loaded_cubins_notes"] == ["n"]


def _kernel(name: str, ts: float, dur: float, corr: int, regs: int, smem: int) -> list[dict]:
    args = {"correlation": corr, "stream": 7, "block": [128, 1, 1]}
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": ts - 3, "dur": 2.0}
    kern = {"ph": "X", "cat": "kernel", "name": name, "ts": ts, "dur": dur}
    kern["args"] = {**args, "registers per thread": regs, "shared memory": smem}
    launch["args"] = {"correlation": corr}
    return [{**e, "pid": 1, "tid": 1} for e in (launch, kern)]


@pytest.fixture
def step_trace(tmp_path: Path) -> Path:
    """Two steps of nvjet (20 µs), cuDNN (10 µs) and an ATen kernel (5 µs) in Kineto's JSON."""
    ev: list[dict] = []
    corr = 0
    for step in range(2):
        base = step * 100.0
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"kernelpilot.step#{step}", "ts": base})
        ev[-1].update(dur=60.0, pid=1, tid=1, args={})
        for name, start, dur in ((NVJET, 5, 20.0), (CUDNN, 30, 10.0), (CXX, 45, 5.0)):
            corr += 1
            ev += _kernel(name, base + start, dur, corr, 64 if name == NVJET else 32, 4096)
    p = tmp_path / "trace.json"
    p.write_text(json.dumps({"traceEvents": ev, "deviceProperties": [{"name": "test GPU"}]}))
    return p


@pytest.fixture
def fake_step(monkeypatch: pytest.MonkeyPatch, step_trace: Path) -> None:
    def fake_capture(target, steps, outdir, timeout_s):
        meta = {"gpu": "NVIDIA H100 80GB HBM3", "arch": "sm_90", "code_objects": [str(OTHER)]}
        return capture.Captured(read_kineto(step_trace), step_trace, meta)

    def fake_drill(target, hot, gpu=None, progress=None, raw_csv=None):
        return [drill.DrillResult(name=h.name, ok=True, pct_of_attainable=50.0) for h in hot]

    monkeypatch.setattr(capture, "capture_closure", fake_capture)
    monkeypatch.setattr(drill, "drill_hot", fake_drill)


def test_run_joins_the_captured_cubins(fake_step: None, monkeypatch: pytest.MonkeyPatch):
    seen: dict[str, Any] = {}

    def fake_modules(spec, workdir, kwargs, names, outdir, timeout_s):
        """The child's work after CUPTI: the driver loads two modules, the recorder writes one."""
        seen["names"] = sorted(set(names))
        cupti, rec = _FakeCupti(), ModuleRecorder()
        rec.start(cupti)
        for m in (_Loaded(RUNTIME, 1), _Loaded(OTHER, 2)):
            cupti.load(m)
        rec.stop(cupti)
        listing, notes = write_images(rec.images, outdir, names)
        return CubinCapture([e["path"] for e in listing], [*notes, "captured"], len(rec.images))

    monkeypatch.setattr(loaded_cubins, "capture_loaded_cubins", fake_modules)
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make", hot_share=1.0))
    assert seen["names"] == sorted([NVJET, CUDNN, CXX]) and "captured" in res.notes
    by = {k.name: k.isa or {} for k in res.kernels}
    assert by[NVJET]["facts"] == "code object" and by[NVJET]["origin"] == ORIGIN
    assert by[NVJET]["registers"] == 64 and by[CUDNN]["facts"] == "code object"
    assert by[CXX]["facts"] == "trace" and by[CXX]["registers"] == 32  # in no code object: launch record
    assert res.isa_code_object_share == pytest.approx(30 / 35)
    assert res.isa_trace_share == pytest.approx(5 / 35) and res.isa_joined_share == pytest.approx(1.0)
    text = res.render_text()
    assert "86% from the code objects loaded" in text and "r64 smem 4096" in text and "(cupti)" in text


def test_run_without_cupti_python_keeps_the_launch_records(fake_step: None, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "cupti", None)
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make", hot_share=1.0))
    assert MISSING_NOTE in res.notes
    assert all((k.isa or {}).get("facts") == "trace" for k in res.kernels)
    assert res.isa_code_object_share == 0.0 and res.isa_trace_share == pytest.approx(1.0)


def test_a_hip_capture_starts_no_cupti_pass(monkeypatch: pytest.MonkeyPatch, step_trace: Path):
    def fake_capture(target, steps, outdir, timeout_s):
        meta = {"gpu": "AMD Instinct MI300X", "arch": "gfx942", "code_objects": []}
        return capture.Captured(read_kineto(step_trace), step_trace, meta)

    def never(*_a: Any, **_k: Any) -> CubinCapture:
        raise AssertionError("CUPTI pass started for an AMD capture")

    monkeypatch.setattr(capture, "capture_closure", fake_capture)
    monkeypatch.setattr(loaded_cubins, "capture_loaded_cubins", never)

    def drilled(target: Any, hot: list[Any], *_a: Any, **_k: Any) -> list[drill.DrillResult]:
        return [drill.DrillResult(name=h.name, ok=True) for h in hot]

    monkeypatch.setattr(drill, "drill_hot", drilled)
    res = core.run_workload(WorkloadRunRequest(spec="step.py:make", hot_share=1.0))
    assert not any("cupti" in n.lower() for n in res.notes)


def test_real_h100_captured_cubins_join_whatever_else_matched_first():
    """On the H100 the capture kept 14 modules, nvjet's and cuDNN's among them, yet the join gave them only
    launch-record facts: once the names it waited for (every name but the run-time compiled `nvjet_*` and
    `cudnn_generated_*`) matched, it stopped reading files. Code-object files are now all read; only
    libraries are searched lazily. The real captured cubins (fixtures/workload/cupti/h100) after a file that
    holds another traced kernel; the launch records are decode.json's."""
    h100 = sorted((FIX / "h100").glob("cupti_module_*.cubin"))
    assert len(h100) == 4
    names = [
        "kp_unrelated_fill",
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT",
        "cudnn_generated_fort_native_sdpa_sm80_flash_fprop_wmma_f16_knob_35_16x128x64_1x4x1_cga1x1x1_kernel0_0",
        "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT",
        "nvjet_sm90_tst_256x8_64x6_2x1_v_bz_TNT",
    ]
    facts = {
        names[1]: LaunchFacts(registers=168, shared_bytes=164308, block=384),
        names[2]: LaunchFacts(registers=120, shared_bytes=45376, block=128),
    }
    out = join_names(names, [FIX / "other_kernel.sm_90.cubin", *h100], "sm_90", None, facts)
    assert [(j.matched, j.facts) for j in out] == [(True, "code object")] * 5
    nvjet, cudnn = out[1], out[2]
    assert (
        nvjet.registers == 168 and nvjet.code_object is not None and "cupti_module_34_" in nvjet.code_object
    )
    assert nvjet.dynamic_shared_bytes == 164308 and nvjet.occupancy is not None
    assert nvjet.occupancy.startswith("18.8% (12/64 warps/SM)") and nvjet.limiter is not None
    assert cudnn.registers == 120 and "cupti_module_37_" in (cudnn.code_object or "")
