"""suggest_experiments: ranking from verdicts, ISA facts and history; bad input typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelpilot.foundation.errors import FormatError, InputFileError
from kernelpilot.suggest.core import suggest_experiments
from kernelpilot.suggest.models import SuggestRequest
from kernelpilot.suggest.rules import LEVERS

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "suggest"


def run(**kw: object) -> list[dict[str, object]]:
    res = suggest_experiments(SuggestRequest.model_validate(kw))
    return [s.model_dump() for s in res.suggestions]


def test_memory_bound_levers_ranked_and_labelled() -> None:
    verdict = json.loads((FIX / "bottleneck_two_kernels.json").read_text())["verdicts"][0]
    out = run(bottleneck=json.dumps(verdict), file=["softmax.py"], max_items=10)
    levers = [s["lever"] for s in out]
    assert levers[:4] == ["vectorize_loads", "coalesce_access", "fuse_kernels", "reuse_on_chip"]
    assert all(s["label"] == "hypothesis" and s["target_kernel"] == "softmax_kernel" for s in out)
    assert all(s["lever_type"] == "memory" for s in out)
    top = out[0]
    assert top["files"] == ["softmax.py"] and top["source"].startswith("CUDA C++ Programming Guide")
    assert any("dram__throughput" in e for e in top["evidence"])  # type: ignore[attr-defined]
    assert "improved" in top["eval_contract"]["must"]  # type: ignore[index]
    assert top["score"] == pytest.approx(0.8 * (0.5 + 0.5 * 0.9), abs=1e-4)


def test_isa_facts_and_history_reorder() -> None:
    out = run(
        bottleneck=str(FIX / "bottleneck_two_kernels.json"),
        isa=str(FIX / "isa_facts.json"),
        history=str(FIX / "history.json"),
        max_items=20,
    )
    by = {(s["target_kernel"], s["lever"]): s for s in out}
    # spills on gemm -> the spill lever exists and leads; none for softmax (0 spills)
    assert ("gemm_kernel", "remove_spills") in by and ("softmax_kernel", "remove_spills") not in by
    assert out[0]["lever"] == "remove_spills"
    # tensor cores boosted (no MMA in the ISA), register tiling damped by spills
    assert by[("gemm_kernel", "tensor_cores")]["score"] == pytest.approx(0.85 * 0.85 * 1.3, abs=1e-4)
    assert by[("gemm_kernel", "register_tiling")]["score"] == pytest.approx(0.6 * 0.85 * 0.7, abs=1e-4)
    # vectorize: boosted by 32-bit loads, but history says it regressed and was neutral -> down-ranked
    vec = by[("softmax_kernel", "vectorize_loads")]
    assert vec["score"] == pytest.approx(0.8 * 0.95 * 1.3 * 0.35 * 0.35, abs=1e-4)
    assert "tried 2x" in vec["history_note"]  # type: ignore[operator]
    soft = [s["lever"] for s in out if s["target_kernel"] == "softmax_kernel"]
    assert soft.index("coalesce_access") < soft.index("vectorize_loads")


def test_sync_latency_unknown_and_task_contract(tmp_path: Path) -> None:
    task = {
        "metric": {"name": "time_us", "direction": "lower"},
        "correctness_commands": [["python", "check.py"]],
        "allowed_files": ["kern.py"],
        "min_effect": 0.02,
    }
    (tmp_path / "task.json").write_text(json.dumps(task))
    sync = run(bottleneck='{"kernel": "k", "verdict": "sync_bound", "confidence": 1.0}', task=str(tmp_path))
    assert {s["lever"] for s in sync} == {"fewer_barriers", "warp_shuffles", "aggregate_atomics"}
    c = sync[0]["eval_contract"]
    assert c["correctness"] == ["python check.py"] and "2%" in c["must"]  # type: ignore[index]
    assert sync[0]["files"] == ["kern.py"]
    lat = run(bottleneck='{"kernel": "k", "verdict": "latency_bound", "confidence": 0.5}')
    assert [s["lever"] for s in lat][:2] == ["raise_occupancy", "increase_ilp"]
    unk = run(bottleneck='{"kernel": "k", "verdict": "unknown", "next_measurements": ["ncu full set"]}')
    assert unk[0]["lever"] == "measure_first" and "next: ncu full set" in unk[0]["evidence"]


def test_every_lever_cites_a_source() -> None:
    for lever in LEVERS:
        assert lever.source and lever.why and lever.risk in ("low", "medium", "high")
        assert lever.id == "measure_first" or "http" in lever.source


def test_bad_inputs(run_cli) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(FormatError, match="verdict"):
        run(bottleneck='{"kernels": []}')
    with pytest.raises(FormatError, match="confidence"):
        run(bottleneck='{"kernel": "k", "verdict": "memory_bound", "confidence": 7}')
    with pytest.raises(InputFileError):
        run(bottleneck="/nonexistent/verdict.json")
    cli = run_cli("suggest", "--bottleneck", "{not json")  # the shared JSON-argument layer names it
    assert cli.code == 2 and "bottleneck is not valid JSON" in cli.err
    cli = run_cli("suggest", "--bottleneck", str(FIX / "bottleneck_two_kernels.json"))
    assert cli.code == 0 and "[HYPOTHESIS]" in cli.out
