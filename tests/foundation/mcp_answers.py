"""Every MCP tool called once on recorded fixtures, and how much of an agent's context each answer takes.

Shared by `tests/foundation/test_mcp_answer_sizes.py` (every answer within the budget, every row reachable)
and `bench/mcp_context.py` (the largest answer per tool). Each `Call` sets up what its tool reads in a scratch
folder (a workspace, a task, an experiment database, a recorded sweep) and gives the tool's arguments. Tools
that need a GPU (or ncu) answer with a recorded result instead: the core function the capability names is
replaced for the call by one that returns the recorded result (`Call.recorded`), so the adapter, the SDK and
the client all run as they do on a GPU machine.

Size: the characters of the text content plus the compact JSON of the structured content; tokens are
approximated as characters / 4 (no tokenizer: a host's own count differs somewhat).
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
BUDGET_CHARS = 32_000  # 8,000 tokens at ~4 characters a token
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com"]


@dataclass(frozen=True)
class Call:
    """One tool call: `args(scratch)` prepares its inputs and returns the MCP arguments; `recorded()`, when
    set, is the result the tool's core function returns instead of running (GPU-only tools); `rows` names
    the result's longest list (dotted path), whose every row must stay reachable; `needs_tool` an external
    program the call cannot run without."""

    tool: str
    label: str
    args: Callable[[Path], dict[str, Any]]
    recorded: Callable[[], Any] | None = None
    rows: str = ""
    needs_tool: str = ""

    @property
    def id(self) -> str:
        return f"{self.tool}[{self.label}]"


def _load(model: str, path: Path) -> Any:
    module, _, name = model.partition(":")
    import importlib

    cls = getattr(importlib.import_module(module), name)
    return cls.model_validate_json(path.read_text(encoding="utf-8"))


def _run(tool: str, **args: Any) -> Any:
    """The tool's core function on `args`, as both adapters call it (setup steps, not measured)."""
    from kernelpilot.capabilities import by_tool

    cap = by_tool(tool)
    assert cap is not None, tool
    return cap.invoke(cap.request.model_validate(args))


def _workspace(tmp: Path) -> tuple[str, str]:
    """A workspace with three iterations recorded: (root, name)."""
    root = str(tmp / "ws")
    _run(
        "init_workspace",
        name="vadd",
        kernel=str(FIXTURES / "workspace" / "vector_add.cu"),
        platform="H100",
        framework="cuda",
        dtype="fp32",
        shape=["N=1024"],
        allow_tbd=True,
        root=root,
    )
    for change, median in [("baseline", 100.0), ("float4 loads", 80.0), ("unroll", 85.0)]:
        _run(
            "memory_create",
            workspace="vadd",
            root=root,
            change=change,
            median=median,
            unit="us",
            correct=True,
        )
    return root, "vadd"


def _task(tmp: Path) -> str:
    repo = tmp / "repo"
    shutil.copytree(FIXTURES / "tasks" / "sample_task", repo)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "."], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=repo, check=True)
    _run(
        "create_task",
        name="t",
        eval_command=[sys.executable, "bench.py"],
        metric_regex=r"time_us: ([0-9.]+)",
        allowed_file=["kernel.py"],
        workdir=str(repo),
        runs=4,
    )
    return str(repo / ".kernelpilot" / "tasks" / "t")


def _db(tmp: Path) -> str:
    """An experiment database holding the recorded task ledger's records."""
    db = str(tmp / "exp.db")
    _run("exp_ingest", db=db, path=str(FIXTURES / "experiments" / "ledger.jsonl"), operator="softmax")
    return db


def _first_id(db: str) -> str:
    return str(_run("exp_list", db=db, limit=1).records[0].id)


def _sweep(tmp: Path) -> tuple[str, str]:
    args = _sweep_run(tmp)
    res = _run("sweep_run", **args)
    return args["db"], res.summary.sweep_id


W = FIXTURES / "workload"
NCU_FULL = FIXTURES / "profile" / "ncu" / "cublas_gemm_bf16_raw.csv"
CUBLASLT = FIXTURES / "isa" / "recorded" / "libcublasLt_resources.json.gz"


def _cublaslt() -> Any:
    import gzip

    from kernelpilot.isa.api import IsaResourcesResult

    return IsaResourcesResult.model_validate_json(gzip.decompress(CUBLASLT.read_bytes()))


def _profile_parse_result() -> Any:
    return _run("profile_parse", path=str(NCU_FULL), include_raw_metrics=True)


def _memory_args(extra: Callable[[str, str], dict[str, Any]]) -> Callable[[Path], dict[str, Any]]:
    def args(tmp: Path) -> dict[str, Any]:
        root, name = _workspace(tmp)
        return {"workspace": name, "root": root, **extra(root, name)}

    return args


def _exp_args(extra: Callable[[str], dict[str, Any]]) -> Callable[[Path], dict[str, Any]]:
    def args(tmp: Path) -> dict[str, Any]:
        db = _db(tmp)
        return {"db": db, **extra(db)}

    return args


def _sweep_report(tmp: Path) -> dict[str, Any]:
    db, sid = _sweep(tmp)
    return {"id": sid, "db": db}


def _sweep_run(tmp: Path) -> dict[str, Any]:
    d = tmp / "sweep"
    d.mkdir()
    for f in ("kernels.py", "shapes.jsonl", "sweep.toml"):
        shutil.copy(FIXTURES / "sweep" / f, d / f)
    return {"spec": str(d / "sweep.toml"), "db": str(d / "exp.db"), "device": "cpu", "workers": 2}


def _time_command(tmp: Path) -> dict[str, Any]:
    script = tmp / "bench.py"
    script.write_text("print('time_us: 12.5')\n")
    return {
        "command": [sys.executable, str(script)],
        "metric_regex": r"time_us: ([0-9.]+)",
        "runs": 5,
        "warmup": 0,
    }


def _bottleneck_json(tmp: Path) -> str:
    return str(FIXTURES / "suggest" / "bottleneck_two_kernels.json")


CALLS: tuple[Call, ...] = (
    # core
    Call("audit_citations", "workspace", lambda t: {"paths": [_workspace(t)[0]]}),
    Call("doctor", "no-gpu-probe", lambda t: {"probe_gpus": False}),
    Call("roofline", "gemm", lambda t: {"gpu": "h100-sxm5", "op": "gemm", "m": 4096, "n": 4096, "k": 4096}),
    Call("spec_lookup", "h100", lambda t: {"gpu": "h100-sxm5"}),
    Call("wiki_list_gpus", "missing", lambda t: {"missing": True}),
    # skills: into a temporary Claude config folder (never the user's)
    Call("skills_install", "tmp-config", lambda t: {"config_dir": str(t / "claude-config")}),
    Call("toolsets_enable", "list", lambda t: {}),
    # measure
    Call("time_kernel", "command", _time_command),
    Call(
        "time_compare",
        "recorded-4mi-self",
        lambda t: {"a": "a.py:make", "b": "b.py:make"},
        recorded=lambda: _load(
            "kernelpilot.timing.models:CompareResult", FIXTURES / "timing" / "compare_self_4mi_h100.json"
        ),
        rows="a_samples",
    ),
    # workload
    Call(
        "workload_read",
        "h100-train",
        lambda t: {"path": str(W / "h100_train_trace.json")},
        rows="kernels",
    ),
    Call(
        "workload_read",
        "h100-decode",
        lambda t: {"path": str(W / "h100_decode_trace.json")},
        rows="kernels",
    ),
    Call(
        "workload_diff",
        "h100-train",
        lambda t: {"a": str(W / "h100_train_run1.json"), "b": str(W / "h100_train_run2.json")},
        rows="rows",
    ),
    Call(
        "workload_isolate",
        "h100-decode-top",
        lambda t: {"path": str(W / "h100_decode_trace.json"), "kernel": "1", "out_dir": str(t / "iso")},
    ),
    Call(
        "workload_report",
        "h100-train",
        lambda t: {"path": str(W / "h100_train_run1.json"), "out": str(t / "w.html")},
    ),
    Call(
        "workload_run",
        "recorded-h100-train",
        lambda t: {"command": ["python", "train.py"]},
        recorded=lambda: _load("kernelpilot.workload.models:WorkloadResult", W / "h100_train_run1.json"),
        rows="kernels",
    ),
    # profile
    Call(
        "profile_parse",
        "ncu-full-raw",
        lambda t: {"path": str(NCU_FULL), "include_raw_metrics": True},
        rows="kernels",
    ),
    Call(
        "profile_hotspots",
        "ncu-source",
        lambda t: {"path": str(FIXTURES / "profile/ncu/local_array_source_cuda_sass.csv")},
    ),
    Call(
        "profile_run",
        "recorded-ncu-full",
        lambda t: {"command": ["./app"]},
        recorded=_profile_parse_result,
        rows="kernels",
    ),
    Call(
        "classify_bottleneck",
        "ncu-full",
        lambda t: {"profile_path": str(FIXTURES / "profile/rootcause/full/transpose_smem_nopad_raw.csv")},
    ),
    Call(
        "profile_att",
        "mi350x-big",
        lambda t: {"path": str(FIXTURES / "profile/att/big/ui_output_agent_38430_dispatch_44")},
    ),
    # isa
    Call("isa_list", "host-app", lambda t: {"file": str(FIXTURES / "isa/nvidia/host_app")}),
    Call(
        "isa_resources",
        "recorded-libcublasLt",
        lambda t: {"file": "libcublasLt.so.13"},
        recorded=_cublaslt,
        rows="kernels",
    ),
    Call("isa_resources", "sm90-cubin", lambda t: {"file": str(FIXTURES / "isa/nvidia/kernels.sm_90.cubin")}),
    Call(
        "isa_occupancy",
        "sm90-cubin",
        lambda t: {"file": str(FIXTURES / "isa/nvidia/kernels.sm_90.cubin"), "block_size": 256},
    ),
    Call(
        "isa_fit_view",
        "gfx1030",
        lambda t: {"file": str(FIXTURES / "isa/amd/k.gfx1030.hsaco"), "block_size": 256},
        needs_tool="llvm-objdump",
    ),
    Call(
        "isa_disasm",
        "gfx1030",
        lambda t: {"file": str(FIXTURES / "isa/amd/k.gfx1030.hsaco")},
        needs_tool="llvm-objdump",
    ),
    Call(
        "isa_mix",
        "gfx1030",
        lambda t: {"file": str(FIXTURES / "isa/amd/k.gfx1030.hsaco")},
        needs_tool="llvm-objdump",
    ),
    # workspace
    Call(
        "init_workspace",
        "vadd",
        lambda t: {
            "name": "vadd",
            "kernel": str(FIXTURES / "workspace" / "vector_add.cu"),
            "platform": "H100",
            "framework": "cuda",
            "allow_tbd": True,
            "root": str(t / "ws"),
        },
    ),
    Call("memory_create", "v3", _memory_args(lambda r, n: {"change": "grid-stride", "median": 90.0})),
    Call("memory_read", "all", _memory_args(lambda r, n: {})),
    Call("memory_summary", "3-versions", _memory_args(lambda r, n: {})),
    Call("memory_mask", "v1", _memory_args(lambda r, n: {"version": 1, "reason": "bad timer"})),
    Call("memory_unmask", "v1", _memory_args(lambda r, n: {"version": 1})),
    Call("memory_update", "v1", _memory_args(lambda r, n: {"version": 1, "patch": {"notes": "checked"}})),
    Call(
        "memory_revert",
        "v2",
        _memory_args(lambda r, n: {"reason": "neutral: unroll did not help", "status": "neutral"}),
    ),
    Call("memory_restart", "from-v1", _memory_args(lambda r, n: {"from_version": 1, "reason": "restart"})),
    Call("render_report", "final", _memory_args(lambda r, n: {"kind": "final"})),
    Call(
        "write_plan",
        "v3",
        _memory_args(lambda r, n: {"title": "wider loads", "hypothesis": "float4 halves the loads"}),
    ),
    # tasks
    Call(
        "create_task",
        "sample",
        lambda t: {
            "name": "t2",
            "eval_command": [sys.executable, "bench.py"],
            "metric_regex": r"time_us: ([0-9.]+)",
            "allowed_file": ["kernel.py"],
            "workdir": str(Path(_task(t)).parents[2]),
        },
    ),
    Call("evaluate", "baseline", lambda t: {"task": _task(t), "refresh_baseline": True}),
    Call("ledger_show", "empty", lambda t: {"task": _task(t)}),
    # experiments
    Call("exp_list", "ledger", _exp_args(lambda db: {}), rows="records"),
    Call("exp_top", "ledger", _exp_args(lambda db: {})),
    Call("exp_failures", "ledger", _exp_args(lambda db: {})),
    Call("exp_similar", "softmax", _exp_args(lambda db: {"operator": "softmax"})),
    Call("exp_get", "first", _exp_args(lambda db: {"id": _first_id(db)})),
    Call("exp_lineage", "first", _exp_args(lambda db: {"id": _first_id(db)})),
    Call("exp_update", "first", _exp_args(lambda db: {"id": _first_id(db), "add_tag": ["checked"]})),
    Call(
        "exp_create",
        "gemm",
        _exp_args(
            lambda db: {"operator": "gemm", "summary": "tile 128 -> 256 - no change", "status": "neutral"}
        ),
    ),
    Call("exp_export", "ledger", _exp_args(lambda db: {"out": str(Path(db).with_suffix(".jsonl"))})),
    Call(
        "exp_import",
        "export",
        lambda t: {"db": str(t / "b.db"), "path": _export(t)},
    ),
    Call(
        "exp_ingest",
        "ledger",
        lambda t: {
            "db": str(t / "c.db"),
            "path": str(FIXTURES / "experiments/ledger.jsonl"),
            "operator": "softmax",
        },
    ),
    Call("exp_upgrade", "v1-store", lambda t: {"db": _copy(FIXTURES / "experiments/store_v1.db", t)}),
    Call("suggest_experiments", "two-kernels", lambda t: {"bottleneck": _bottleneck_json(t)}),
    # sweep
    Call("sweep_run", "cpu", _sweep_run),
    Call("sweep_report", "cpu", _sweep_report, rows="summary.cells"),
)


def _copy(src: Path, tmp: Path) -> str:
    dst = tmp / src.name
    shutil.copy(src, dst)
    return str(dst)


def _export(tmp: Path) -> str:
    out = tmp / "export.jsonl"
    _run("exp_export", db=_db(tmp), out=str(out))
    return str(out)


# Tools no call above reaches, each with why (the test fails on a tool neither called nor listed here).
NOT_CALLED: dict[str, str] = {
    "ceilings_measure": "measures a GPU with PyTorch; no recorded CeilingsResult exists to answer with",
}


@contextlib.contextmanager
def answering_with(call: Call) -> Iterator[None]:
    """Within the block, the call's capability returns `call.recorded()` instead of running its core."""
    if call.recorded is None:
        yield
        return
    from unittest import mock

    from kernelpilot.capabilities import by_tool

    cap = by_tool(call.tool)
    assert cap is not None, call.tool
    module, _, name = cap.target.partition(":")
    result = call.recorded()

    def fake(*_a: Any, **_k: Any) -> Any:
        return result

    with mock.patch(f"{module}.{name}", fake):
        yield


def answer_size(res: Any) -> tuple[int, int]:
    """(text characters, structured-content characters as compact JSON) of one CallToolResult."""
    text = sum(len(getattr(c, "text", "") or "") for c in res.content)
    structured = res.structured_content
    return text, 0 if structured is None else len(json.dumps(structured, separators=(",", ":")))


def dotted(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[part]
    return data
