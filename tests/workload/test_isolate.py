"""`workload isolate` on the recorded H100 traces: every hot kernel's factory, run on the CPU under the torch
profiler, calls the op the trace recorded with the same input dims and dtypes; the written files pass ruff;
bad input is a typed error with its fix.

The traces that recorded shapes (`record_shapes`): tests/fixtures/workload/h100_decode_trace.json,
h100_train_trace.json and h100_remedies/prefill_trace.json.gz (PROVENANCE.md there); the CUDA-graph decode
trace recorded none (graph replays), which the error case below uses.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from tests.needs import needs_module

from kernelpilot.foundation.errors import InputFileError, KernelpilotError
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.errors import KernelChoiceError, NotIsolableError
from kernelpilot.workload.isolate import isolate_row, isolate_workload
from kernelpilot.workload.models import WorkloadIsolateRequest, WorkloadReadRequest, WorkloadResult
from kernelpilot.workload.op_calls import TENSOR_TYPES, OpCall, read_trace_ops

torch = needs_module("torch", "pip install torch==2.13.0 (the CPU wheel; .ci/run installs it)")

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workload"
TRACES = {
    "decode": FIX / "h100_decode_trace.json",
    "prefill": FIX / "h100_remedies" / "prefill_trace.json.gz",
    "train": FIX / "h100_train_trace.json",
}
ROOT = Path(__file__).resolve().parents[2]


def _load(path: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _profiled_call(bench: str, op: str) -> OpCall:
    """The outermost `op` call the bench's step records on the CPU under the torch profiler, read back from
    its Chrome trace by the reader isolate uses (`op_calls.read_trace_ops`)."""
    step = _load(bench).make("cpu")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        step()
    out = Path(bench).with_suffix(".trace.json")
    prof.export_chrome_trace(str(out))
    calls = [c for c in read_trace_ops(out).ops if c.name == op and (c.parent is None or c.parent.name != op)]
    assert calls, f"{bench} called no {op}"
    return calls[0]


def _tensor_dtypes(types: list[str]) -> list[str | None]:
    return [TENSOR_TYPES.get(t) for t in types]


@pytest.fixture(scope="module")
def isolated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[WorkloadResult, list[Any]]]:
    """Every hot row of each trace isolated (from one read per trace): result or the typed error."""
    out: dict[str, tuple[WorkloadResult, list[Any]]] = {}
    for case, path in TRACES.items():
        res = read_workload(WorkloadReadRequest(path=str(path)))
        ops = read_trace_ops(path)
        folder = tmp_path_factory.mktemp(case)
        rows: list[Any] = []
        for row, k in enumerate(res.kernels, 1):
            if not k.hot:
                continue
            req = WorkloadIsolateRequest(
                path=str(path), kernel=str(row), out_dir=str(folder), name=f"row{row}"
            )
            try:
                rows.append(isolate_row(req, res, path, ops, row))
            except KernelpilotError as exc:
                rows.append(exc)
        out[case] = (res, rows)
    return out


@pytest.mark.parametrize("case", list(TRACES))
def test_each_hot_kernel_factory_calls_the_recorded_op_with_its_dims_and_dtypes(
    isolated: dict[str, tuple[WorkloadResult, list[Any]]], case: str
) -> None:
    _, rows = isolated[case]
    done = [r for r in rows if not isinstance(r, Exception)]
    for r in rows:  # every other one says why not
        if isinstance(r, Exception):
            assert isinstance(r, NotIsolableError) and r.message and r.hint
    assert len(done) / len(rows) >= 0.9, [str(r) for r in rows if isinstance(r, Exception)]
    for r in done:
        op = "aten::" + r.called_op.split(".")[3]
        ran = _profiled_call(r.bench, op)
        assert ran.dims == r.called_dims, (r.kernel, ran.dims, r.called_dims)
        assert _tensor_dtypes(ran.types) == _tensor_dtypes(r.called_types), (r.kernel, ran.types)


def test_isolable_share_and_what_was_not_recovered(
    isolated: dict[str, tuple[WorkloadResult, list[Any]]],
) -> None:
    counts = {
        case: (sum(not isinstance(r, Exception) for r in rows), len(rows))
        for case, (_, rows) in isolated.items()
    }
    # every hot row (rows split by shape: the decode GEMM kernel's three shapes are three rows)
    assert counts == {"decode": (12, 12), "prefill": (12, 12), "train": (12, 12)}
    train = [r for r in isolated["train"][1] if r.called_op.startswith("torch.ops.aten._foreach")]
    assert len(train) == 7
    # the overload the kernel's name says: a ScalarListFunctor kernel takes one Python float per member
    ops = {r.called_op for r in train}
    assert {"torch.ops.aten._foreach_addcdiv_.ScalarList", "torch.ops.aten._foreach_div_.ScalarList"} <= ops
    assert "torch.ops.aten._foreach_mul_.Scalar" in ops
    for r in train:  # TensorList members come from _foreach_sqrt's 31 allocations, and say so
        assert any("31 shapes come from the allocations of aten::_foreach_sqrt" in n for n in r.not_recovered)
        assert r.contract is None
    sdpa = [r for r in isolated["decode"][1] if "scaled_dot_product_attention" in r.called_op]
    assert len(sdpa) == 1 and sdpa[0].launching_op == "aten::_cudnn_attention_forward"
    assert sdpa[0].roofline_args == {
        "op": "attention", "batch": 8, "heads": 16, "kv_heads": 16, "seq_q": 1, "seq_k": 512, "head_dim": 64,
        "causal": False, "dtype": "bf16",
    }  # fmt: skip


def test_gemm_contract_has_the_recorded_shape_first_and_two_more(
    isolated: dict[str, tuple[WorkloadResult, list[Any]]],
) -> None:
    top = next(r for r in isolated["decode"][1] if r.shape.dims == [[8, 1024], [1024, 2816]])
    assert top.called_op == "torch.ops.aten.mm.default" and top.shape.dims == [[8, 1024], [1024, 2816]]
    assert top.contract_shapes == [{"m": 8, "k": 1024, "n": 2816}, {"m": 8, "k": 1024, "n": 3072},
                                   {"m": 8, "k": 1024, "n": 1024}]  # fmt: skip
    doc = json.loads(Path(top.contract).read_text())
    assert doc["dtype"] == "bf16" and doc["reduction"] == "k" and doc["candidate"].endswith(":kernel")
    assert doc["roofline"] == {"op": "gemm", "params": {"m": "m", "n": "n", "k": "k"}}
    text = Path(top.bench).read_text()
    assert "X_SHAPE = (8, 1024)" in text and "MAT2_STRIDE = (1, 1024)" in text  # named, with the layout
    assert "h100_decode_trace.json" in text
    assert top.roofline_args == {"op": "gemm", "m": 8, "n": 2816, "k": 1024, "dtype": "bf16"}


@pytest.mark.needs_tool("ruff")
def test_generated_files_pass_ruff(isolated: dict[str, tuple[WorkloadResult, list[Any]]]) -> None:
    ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
    files = [
        f
        for _, rows in isolated.values()
        for r in rows
        if not isinstance(r, Exception)
        for f in (r.bench, r.contract_module)
        if f
    ]
    for config in ([], ["--config", str(ROOT / "pyproject.toml")]):  # ruff's defaults, then this project's
        run = subprocess.run([ruff, "check", "--no-cache", *config, *files], capture_output=True, text=True)
        assert run.returncode == 0, run.stdout[-3000:]


def test_kernel_by_name_and_the_choice_errors(tmp_path: Path) -> None:
    path = str(TRACES["decode"])
    r = isolate_workload(WorkloadIsolateRequest(path=path, kernel="rsqrt", out_dir=str(tmp_path)))
    assert r.called_op == "torch.ops.aten.rsqrt.default" and r.shape.dims == [[8, 1, 1]]
    with pytest.raises(KernelChoiceError, match=r"has \d+ kernel rows"):
        isolate_workload(WorkloadIsolateRequest(path=path, kernel="99", out_dir=str(tmp_path)))
    with pytest.raises(KernelChoiceError, match=r"matches \d+ kernel rows") as many:
        isolate_workload(WorkloadIsolateRequest(path=path, kernel="nvjet", out_dir=str(tmp_path)))
    assert "row number" in many.value.hint
    with pytest.raises(KernelChoiceError, match="matches no kernel"):
        isolate_workload(WorkloadIsolateRequest(path=path, kernel="no_such_kernel", out_dir=str(tmp_path)))


def test_inputs_it_cannot_isolate_are_typed_errors(tmp_path: Path) -> None:
    def iso(path: Path, kernel: str = "1") -> None:
        isolate_workload(WorkloadIsolateRequest(path=str(path), kernel=kernel, out_dir=str(tmp_path)))

    with pytest.raises(NotIsolableError, match="graph replay") as graph:
        iso(FIX / "h100_decode_graph_trace.json")
    assert "eagerly" in graph.value.hint
    no_shapes = tmp_path / "no_shapes.json"
    doc = json.loads(TRACES["decode"].read_text())
    for ev in doc["traceEvents"]:
        for key in ("Input Dims", "Input type", "Input Strides", "Concrete Inputs"):
            ev.get("args", {}).pop(key, None)
    no_shapes.write_text(json.dumps(doc))
    with pytest.raises(NotIsolableError, match="record_shapes was off") as off:
        iso(no_shapes)
    assert "record_shapes=True" in off.value.hint
    with pytest.raises(NotIsolableError, match="a table") as table:
        iso(FIX / "mi350x_flash_attn_kernel_trace.csv")
    assert "PyTorch profiler" in table.value.hint
    old = json.loads((FIX / "h100_decode_run1.json").read_text())
    old["kernels"][0]["a_field_of_another_version"] = 1
    stale = tmp_path / "old_result.json"
    stale.write_text(json.dumps(old))
    with pytest.raises(InputFileError, match="not a workload result of this kernelpilot version") as other:
        iso(stale)
    assert "workload read TRACE --out" in other.value.hint
    with pytest.raises(InputFileError, match="does not exist"):
        iso(tmp_path / "missing.json")


def test_a_result_json_leads_to_its_trace(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    read_workload(WorkloadReadRequest(path=str(TRACES["decode"]), out=str(out)))
    r = isolate_workload(WorkloadIsolateRequest(path=str(out), kernel="1", out_dir=str(tmp_path)))
    assert r.called_op == "torch.ops.aten.copy_.default" and r.trace == str(TRACES["decode"])
    assert json.loads(Path(r.contract or "").read_text())["in_place"] == [0]


def test_cli_writes_the_files_and_prints_the_next_commands(run_cli: Any, tmp_path: Path) -> None:
    r = run_cli("workload", "isolate", str(TRACES["prefill"]), "--kernel", "1", "--out-dir", str(tmp_path))
    assert r.code == 0, r.err
    assert "launched by aten::mm" in r.out and "next: kernelpilot time" in r.out
    assert (tmp_path / "bench_mm_2048x1024_1024x2816.py").is_file()
    bad = run_cli("workload", "isolate", str(TRACES["prefill"]), "--kernel", "0", "--out-dir", str(tmp_path))
    assert bad.code != 0 and "fix:" in bad.err
