"""The static issue floors of bench/issue_bound_kernels.py before any device time: compile each kernel for
sm_90 on this host (no GPU, no torch needed) and floor its code object with `kernelpilot roofline`.

Triton compiles for a target it is given (`GPUTarget("cuda", 90, 32)`) with the ptxas its wheel ships. The
runtime launcher marks every pointer and every integer divisible by 16 (`tt.divisibility`), which decides the
vector widths and layouts, so the compile here marks them too (the first H100 run's cubins came out
instruction for instruction the same this way; without the marks the counts are 30-250 % higher).

Usage (repository root; Triton 3.6 importable, e.g. `pip install --target /tmp/tri triton==3.6.0`):
    PYTHONPATH=/tmp/tri:server .venv/bin/python bench/issue_bound_offline.py [--out DIR] [--gpu h100-sxm5]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ISSUE_OVER_MEMORY = 1.4  # an issue-bound kernel of the acceptance run: its issue floor this far over memory


def _kernels() -> Any:
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        # the factories need torch; the kernels and OFFLINE do not
        sys.modules["torch"] = types.ModuleType("torch")
    sys.path.insert(0, str(BENCH))
    import issue_bound_kernels

    return issue_bound_kernels


def compile_all(out: Path) -> dict[str, Path]:
    """Each OFFLINE kernel's cubin for sm_90, named as the device run names it (`<kernel>.cubin`)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    got: dict[str, Path] = {}
    for name, (kernel, sig, consts, warps, _grid, _op) in _kernels().OFFLINE.items():
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(sig))}
        src = ASTSource(kernel, signature={**sig, **dict.fromkeys(consts, "constexpr")}, constexprs=consts,
                        attrs=attrs)  # fmt: skip
        c = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
        path = out / f"{kernel.__name__}.cubin"
        path.write_bytes(c.asm["cubin"])
        got[name] = path
    return got


def floors(cubins: dict[str, Path], gpu: str) -> list[dict[str, Any]]:
    from kernelpilot.roofline.core import analyze
    from kernelpilot.roofline.models import RooflineRequest

    rows = []
    for name, path in cubins.items():
        kernel, _sig, _consts, warps, grid, op = _kernels().OFFLINE[name]
        req = dict(op, gpu=gpu, isa=str(path), isa_kernel=f"^{kernel.__name__}$", grid=[grid])
        req["block"] = [32 * warps]
        r = analyze(RooflineRequest.model_validate(req))
        st = r.issue[0]
        mem = r.memory_time_us
        rows.append(
            dict(name=name, kernel=kernel.__name__, instr=st.what.split(": ")[2].split(" instr")[0],
                 binding=st.binding, issue_us=st.time_us, memory_us=mem, ratio=st.time_us / mem,
                 bound=r.bound, lower_bound=st.lower_bound)
        )  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/issue_bound_offline"))
    ap.add_argument("--gpu", default="h100-sxm5")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    rows = floors(compile_all(a.out), a.gpu)
    print(f"{'kernel':10s} {'instr/warp':>10s} {'pipe':>6s} {'issue fl':>9s} {'mem fl':>8s} ratio bound")
    for r in rows:
        print(
            f"{r['name']:10s} {r['instr']:>10s} {r['binding']:>6s} {r['issue_us']:9.2f} "
            f"{r['memory_us']:8.2f} {r['ratio']:5.2f} {r['bound']}"
            + (f"  ({r['lower_bound']})" if r["lower_bound"] else "")
        )
    issue = [r["name"] for r in rows if r["bound"] == "issue"]
    weak = [r["name"] for r in rows if r["bound"] == "issue" and r["ratio"] < ISSUE_OVER_MEMORY]
    print(f"issue-bound: {issue}; issue floor under {ISSUE_OVER_MEMORY}x memory: {weak}")
    return 1 if weak else 0


if __name__ == "__main__":
    sys.exit(main())
