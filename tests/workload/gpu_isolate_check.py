"""GPU check of `workload isolate` (issue 44), for a CUDA machine: does each isolated op launch the kernel the
trace recorded?

For every hot row of the recorded H100 decode, prefill and train traces, writes the bench with `workload
isolate`, runs its step a few times under torch.profiler (CUDA activity) and lists the kernels it launched;
a row passes when the trace's kernel name is among them. Prints one line per row and writes the whole record
as JSON (the argument, default isolate_gpu_check.json), to be kept under tests/fixtures/workload/ with a
PROVENANCE line (machine, driver, torch, date). Not run yet: no GPU machine was lent in the session that wrote
it. Run from the repository root: `PYTHONPATH=server python3 tests/workload/gpu_isolate_check.py out.json`.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.workload.core import read_workload
from kernelpilot.workload.isolate import isolate_row
from kernelpilot.workload.models import WorkloadIsolateRequest, WorkloadReadRequest
from kernelpilot.workload.op_calls import read_trace_ops

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "workload"
TRACES = [
    FIX / "h100_decode_trace.json",
    FIX / "h100_remedies" / "prefill_trace.json.gz",
    FIX / "h100_train_trace.json",
]


def _kernels_of(bench: str) -> list[str]:
    spec = importlib.util.spec_from_file_location(Path(bench).stem, bench)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    step = mod.make("cuda")
    for _ in range(3):  # warm-up: library heuristics, lazy module loads
        step()
    torch.cuda.synchronize()
    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=acts) as prof:
        step()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def main(out: str) -> int:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for trace in TRACES:
            res = read_workload(WorkloadReadRequest(path=str(trace)))
            ops = read_trace_ops(trace)
            for row, k in enumerate(res.kernels, 1):
                if not k.hot:
                    continue
                req = WorkloadIsolateRequest(path=str(trace), kernel=str(row), out_dir=tmp, name=f"r{row}")
                entry: dict[str, Any] = {"trace": trace.name, "row": row, "kernel": k.name}
                try:
                    r = isolate_row(req, res, trace, ops, row)
                    launched = _kernels_of(r.bench)
                    entry.update(called_op=r.called_op, launched=launched, same_kernel=k.name in launched)
                except KernelpilotError as exc:
                    entry.update(error=str(exc))
                rows.append(entry)
                print(
                    f"{trace.name} row {row}: {entry.get('same_kernel', entry.get('error'))} {k.short_name}"
                )
    meta = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda}
    Path(out).write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    same = sum(bool(r.get("same_kernel")) for r in rows)
    print(f"same kernel as the trace: {same} of {len(rows)} hot rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "isolate_gpu_check.json"))
