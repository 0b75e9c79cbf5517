"""Reproduce: torch.compile of bench/workload_model.py's decode step under torch.inference_mode and under
torch.no_grad() (what `workload run --try-remedies` advises when the compile remedy fails on an inference-mode
step: workload/remedies_child.INFERENCE_MODE_HINT).

Usage: python device/compile_grad_mode.py [--device cpu|cuda] [--mode default|reduce-overhead] [--out FILE]
Each grad mode in a fresh child process (inductor's caches and dynamo's state apart): eager output, whether
it is an inference tensor (`remedies_child.runs_in_inference_mode`), then `torch.compile(step, mode=...)`
called three times: compiled or not, the reason as the remedies child words it (`failure_reason`), the
compile wall time, whether the output equals eager's within the child's bf16 tolerance
(`outputs_match`), the largest |compiled - eager| of the logits and the largest |eager|. One JSON line per
grad mode; the last line `figure=` says which compiled. Needs torch (a CPU build will do: the failure is
inductor's, not CUDA's).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODES = ("inference", "no_grad")


def one(grad_mode: str, device: str, mode: str) -> dict[str, Any]:
    """In the child: build the step, run it eagerly, compile it; what happened."""
    sys.path[:0] = [str(REPO / "server"), str(REPO / "bench")]
    import torch

    import workload_model as wm
    from kernelpilot.workload.remedies_child import failure_reason, outputs_match, runs_in_inference_mode

    step = wm.make_decode(grad_mode=grad_mode, device=device)
    eager = step()
    row: dict[str, Any] = {
        "grad_mode": grad_mode,
        "device": device,
        "compile_mode": mode,
        "torch": torch.__version__,
        "inference_output": runs_in_inference_mode(torch, eager),
    }
    reference = eager.detach().clone()
    fn = torch.compile(step, mode=None if mode == "default" else mode)
    t0 = time.perf_counter()
    try:
        for _ in range(3):
            out = fn()
    except Exception as exc:  # inductor's failure is the finding
        row.update(compiled=False, why=failure_reason(exc), compile_s=round(time.perf_counter() - t0, 1))
        return row
    equal, diff, how = outputs_match(torch, reference, out, exact=False)  # the remedies child's check
    row.update(
        compiled=True,
        compile_s=round(time.perf_counter() - t0, 1),
        outputs_equal=equal,
        tolerance=how,
        max_abs_diff=diff,
        max_abs_eager=reference.double().abs().max().item(),
    )
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--mode", default="default", choices=("default", "reduce-overhead"))
    ap.add_argument("--out", type=Path, help="also write the rows as JSON lines here")
    ap.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(one(a.child, a.device, a.mode)))
        return 0
    print(f"machine: {platform.node()} {platform.machine()}, Python {platform.python_version()}", flush=True)
    rows = []
    for gm in MODES:
        argv = [sys.executable, __file__, "--child", gm, "--device", a.device, "--mode", a.mode]
        done = subprocess.run(argv, capture_output=True, text=True, check=False)
        lines = done.stdout.strip().splitlines()
        row = (
            json.loads(lines[-1])
            if done.returncode == 0 and lines
            else {"grad_mode": gm, "error": done.stderr[-600:]}
        )
        rows.append(row)
        print(json.dumps(row), flush=True)
    if a.out:
        a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok = [r["grad_mode"] for r in rows if r.get("compiled")]
    print(f"figure=compiled under {', '.join(ok) or 'neither'} of {', '.join(MODES)} ({a.device}, {a.mode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
