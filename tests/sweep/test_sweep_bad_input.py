"""Bad input gives a typed error naming the line / variant / address, and recorded cells stay recorded."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from kernelpilot.experiments.backends import open_store
from kernelpilot.experiments.store import RecordFilter
from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.sweep.errors import (
    CellFailedError,
    LedgerError,
    SchedulerUnreachableError,
    SweepSpecError,
    UnknownVariantError,
)
from kernelpilot.sweep.models import SweepRunRequest
from kernelpilot.sweep.run import run_sweep


def _req(spec: Path, db: Path, **kw) -> SweepRunRequest:
    return SweepRunRequest(spec=str(spec), db=str(db), device="cpu", workers=2, **kw)


def _count(db: Path) -> int:
    store = open_store(str(db))
    try:
        return store.count(RecordFilter(tag=["sweep-cell"]))
    finally:
        store.close()


def _rewrite_line(ledger: Path, lineno: int, new: str) -> None:
    lines = ledger.read_text().splitlines()
    lines[lineno - 1] = new
    ledger.write_text("\n".join(lines) + "\n")


def test_ledger_line_not_json_names_the_line(sweep_dir: Path, tmp_path: Path):
    _rewrite_line(sweep_dir / "shapes.jsonl", 5, '{"model": "toy-llm", "rows": 64,')
    with pytest.raises(LedgerError, match=r"shapes\.jsonl:5 is not JSON"):
        run_sweep(_req(sweep_dir / "sweep.toml", tmp_path / "e.db"))
    assert not (tmp_path / "e.db").exists()  # nothing ran, nothing was written


def test_ledger_line_missing_a_field_a_variant_needs(sweep_dir: Path, tmp_path: Path):
    ledger = sweep_dir / "shapes.jsonl"
    obj = json.loads(ledger.read_text().splitlines()[6])
    del obj["cols"]
    _rewrite_line(ledger, 7, json.dumps(obj))
    with pytest.raises(
        LedgerError, match=r"ledger line 7 .*lacks field\(s\) cols that variant 'numpy' needs"
    ):
        run_sweep(_req(sweep_dir / "sweep.toml", tmp_path / "e.db"))


def test_ledger_line_without_model_stage_dtype(sweep_dir: Path, tmp_path: Path):
    _rewrite_line(sweep_dir / "shapes.jsonl", 2, '{"model": "toy-llm", "stage": "decode", "rows": 64}')
    with pytest.raises(LedgerError, match=r"shapes\.jsonl:2 lacks 'dtype'"):
        run_sweep(_req(sweep_dir / "sweep.toml", tmp_path / "e.db"))


def test_unknown_baseline_variant(sweep_dir: Path, tmp_path: Path):
    spec = sweep_dir / "sweep.toml"
    spec.write_text(spec.read_text().replace('baseline = "numpy"', 'baseline = "cublas"'))
    with pytest.raises(
        UnknownVariantError, match=r"baseline 'cublas' is not a variant \(variants: numpy, einsum\)"
    ):
        run_sweep(_req(spec, tmp_path / "e.db"))


def test_unknown_factory_function_names_the_variant(sweep_dir: Path, tmp_path: Path):
    spec = sweep_dir / "sweep.toml"
    spec.write_text(spec.read_text().replace("kernels.py:einsum_sum", "kernels.py:no_such_kernel"))
    with pytest.raises(KernelpilotError, match=r"variant 'einsum': .*no callable 'no_such_kernel'"):
        run_sweep(_req(spec, tmp_path / "e.db"))


def test_spec_key_errors_are_named(sweep_dir: Path, tmp_path: Path):
    spec = sweep_dir / "sweep.toml"
    spec.write_text(spec.read_text().replace('mode = "warm"', 'mode = "tepid"'))
    with pytest.raises(SweepSpecError, match=r"mode: must be 'cold' or 'warm'"):
        run_sweep(_req(spec, tmp_path / "e.db"))


def test_factory_that_raises_names_variant_and_lines_and_keeps_the_other_cells(
    sweep_dir: Path, tmp_path: Path
):
    spec = sweep_dir / "sweep.toml"
    spec.write_text(spec.read_text().replace("kernels.py:einsum_sum", "kernels.py:broken"))
    db = tmp_path / "e.db"
    with pytest.raises(CellFailedError) as err:
        run_sweep(_req(spec, db))
    msg = err.value.message
    assert "6 cell(s)" in msg and "18 new cell(s) recorded" in msg
    assert (
        "variant 'einsum' at ledger line 3: factory kernels.py:broken raised RuntimeError: no kernel" in msg
    )
    assert _count(db) == 18
    # a re-run retries only the crashed cells; what was recorded stays
    with pytest.raises(CellFailedError, match=r"0 new cell\(s\) recorded, 18 were already"):
        run_sweep(_req(spec, db))
    assert _count(db) == 18


def test_unreachable_scheduler_names_the_address_and_loses_nothing(sweep_dir: Path, tmp_path: Path):
    spec = sweep_dir / "sweep.toml"
    spec.write_text(spec.read_text().replace("kernels.py:einsum_sum", "kernels.py:broken"))
    db = tmp_path / "e.db"
    with pytest.raises(CellFailedError):
        run_sweep(_req(spec, db))
    assert _count(db) == 18
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    addr = f"tcp://127.0.0.1:{port}"
    with pytest.raises(SchedulerUnreachableError, match=rf"Dask scheduler {addr} did not answer within 2 s"):
        run_sweep(_req(spec, db, scheduler=addr, connect_timeout_s=2))
    assert _count(db) == 18


def test_cli_prints_the_error_and_fix_without_a_traceback(sweep_dir: Path, tmp_path: Path, run_cli):
    _rewrite_line(sweep_dir / "shapes.jsonl", 9, "not json")
    r = run_cli(
        "sweep", "run", str(sweep_dir / "sweep.toml"), "--device", "cpu", "--db", str(tmp_path / "e.db")
    )
    assert r.code == 2
    assert "kernelpilot: error: shapes.jsonl:9 is not JSON" in r.err and "fix:" in r.err
    assert "Traceback" not in r.err + r.out
