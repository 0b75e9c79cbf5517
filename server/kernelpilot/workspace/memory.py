"""Iteration memory: `memory/v<N>.json` records validated against the shipped `memory.schema.json`.

Owns create / read / update / mask / unmask / summary / restart. Reads and summaries skip masked
versions. Every write is atomic and (by default) committed, so the workspace tree stays clean and a
partial restart can check out the kernel of any recorded version.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from kernelpilot.atomic import create_json_exclusive, write_json_atomic
from kernelpilot.errors import InputFileError, InvalidArgumentError, StateError
from kernelpilot.workspace import gitops
from kernelpilot.workspace.core import Workspace, locate, now_iso
from kernelpilot.workspace.errors import DirtyTreeError, MemorySchemaError, MemoryVersionError
from kernelpilot.workspace.models import (
    MemoryCreateRequest,
    MemoryMaskRequest,
    MemoryReadRequest,
    MemoryRecordResult,
    MemoryRestartRequest,
    MemoryRestartResult,
    MemorySummaryRequest,
    MemorySummaryResult,
    MemoryUnmaskRequest,
    MemoryUpdateRequest,
    SummaryEntry,
)
from kernelpilot.workspace.schema import SchemaViolation, memory_schema, validate

_FILE_RE = re.compile(r"^v(\d+)\.json$")
_UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
_FROZEN_KEYS = ("schema_version", "version", "created", "masked", "mask_reason")


def memory_path(ws: Workspace, version: int) -> Path:
    return ws.memory_dir / f"v{version}.json"


def rel(ws: Workspace, path: Path) -> str:
    return path.relative_to(ws.path).as_posix()


def validate_record(record: Any, file: str) -> dict[str, Any]:
    """Validate against the schema; MemorySchemaError names the file and the field path."""
    try:
        validate(record, memory_schema())
    except SchemaViolation as exc:
        raise MemorySchemaError(
            f"{file}: field '{exc.path or '<root>'}' {exc.reason}",
            "fix that field (see memory.schema.json shipped in kernelpilot/workspace/)",
            field_path=exc.path,
            file=file,
        ) from None
    assert isinstance(record, dict)
    return record


def load_record(ws: Workspace, version: int) -> dict[str, Any]:
    path = memory_path(ws, version)
    if not path.is_file():
        raise MemoryVersionError(
            f"memory version v{version} does not exist in {ws.name}",
            "list versions with `kernelpilot memory summary`",
        )
    return _load_file(ws, path, version)


def _load_file(ws: Workspace, path: Path, version: int) -> dict[str, Any]:
    name = rel(ws, path)
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MemorySchemaError(
            f"{name} is not UTF-8 text (byte {exc.start})", "restore it with git checkout", file=name
        ) from exc
    except json.JSONDecodeError as exc:
        raise MemorySchemaError(
            f"{name} is not valid JSON: {exc.msg} at line {exc.lineno}",
            "restore it with git checkout",
            file=name,
        ) from exc
    record = validate_record(data, name)
    if record["version"] != version:
        raise MemorySchemaError(
            f"{name}: field 'version' is {record['version']} but the file name says v{version}",
            "rename the file or fix the field",
            field_path="version",
            file=name,
        )
    return record


def load_all(ws: Workspace) -> list[dict[str, Any]]:
    """Every record (masked included), sorted by version, each validated."""
    found: list[tuple[int, Path]] = []
    if ws.memory_dir.is_dir():
        for path in ws.memory_dir.iterdir():
            m = _FILE_RE.match(path.name)
            if m:
                found.append((int(m.group(1)), path))
    found.sort()
    return [_load_file(ws, path, v) for v, path in found]


def _to_us(median: float | None, unit: str) -> float | None:
    return None if median is None else median * _UNIT_TO_US[unit]


def _baseline(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    unmasked = [r for r in records if not r["masked"]]
    return unmasked[0] if unmasked else None


def _write(ws: Workspace, record: dict[str, Any], message: str, commit: bool) -> tuple[str, str | None]:
    path = memory_path(ws, int(record["version"]))
    validate_record(record, rel(ws, path))
    write_json_atomic(path, record)
    head = gitops.commit_all(ws.path, message, [rel(ws, path)]) if commit else None
    return rel(ws, path), head


def _parse_pitfall(text: str) -> dict[str, str]:
    if "=>" not in text:
        raise InvalidArgumentError(
            f"--pitfall {text!r} must be written 'pitfall => fix'", "separate the problem and its fix with =>"
        )
    pitfall, fix = (s.strip() for s in text.split("=>", 1))
    return {"pitfall": pitfall, "fix": fix}


def _from_eval(req: MemoryCreateRequest, ws: Workspace) -> MemoryCreateRequest:
    """Fill unset performance/correctness fields from an eval `result.json` (`tasks.models.EvalRecord`)."""
    if req.eval_result is None:
        return req
    path = Path(req.eval_result).expanduser()
    if not path.is_absolute() and not path.exists():
        path = ws.path / path
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputFileError(
            f"--eval-result {req.eval_result!r} does not exist", "give a result.json path"
        ) from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise InputFileError(
            f"--eval-result {req.eval_result!r} is not readable JSON: {exc}", "re-run eval"
        ) from exc
    if not isinstance(data, dict) or data.get("schema_version") != 1 or "status" not in data:
        raise InputFileError(
            f"--eval-result {req.eval_result!r} is not an eval result.json (schema_version 1 with status)",
            "pass the result.json written by `kernelpilot eval`",
        )
    updates: dict[str, Any] = {}
    metric = str(data.get("metric") or "")
    unit = next((u for u in ("ns", "us", "ms", "s") if metric.endswith(f"_{u}")), None)
    median = data.get("candidate_median")
    lower = data.get("direction", "lower") == "lower"
    if req.median is None and unit is not None and lower and isinstance(median, (int, float)) and median > 0:
        updates["median"] = float(median)
        updates["unit"] = unit
        samples = [float(x) for x in data.get("samples") or [] if isinstance(x, (int, float))]
        if req.samples is None and samples:
            updates["samples"] = len(samples)
        if req.spread_pct is None and len(samples) >= 2:
            # (max - min) / median of the candidate's per-run samples, as eval recorded them
            updates["spread_pct"] = round((max(samples) - min(samples)) / float(median) * 100.0, 3)
    speedup = data.get("speedup")
    if req.vs_baseline is None and isinstance(speedup, (int, float)) and speedup > 0:
        updates["vs_baseline"] = float(speedup)
    if req.correct is None and data["status"] == "correctness_failed":
        updates["correct"] = False
    if req.perf_source is None:
        try:
            updates["perf_source"] = path.resolve().relative_to(ws.path).as_posix()
        except ValueError:
            updates["perf_source"] = str(path)
    return req.model_copy(update=updates)


def memory_create(req: MemoryCreateRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    req = _from_eval(req, ws)
    records = load_all(ws)
    by_version = {int(r["version"]): r for r in records}
    version = req.version if req.version is not None else (max(by_version) + 1 if by_version else 0)
    if version in by_version:
        raise StateError(
            f"memory version v{version} already exists in {ws.name}",
            "omit --version to take the next free one, or use `kernelpilot memory update`",
        )
    parent = req.parent
    if parent is None:
        earlier = [v for v, r in by_version.items() if v < version and not r["masked"]]
        parent = max(earlier) if earlier else None
    elif parent not in by_version:
        raise MemoryVersionError(
            f"--parent v{parent} does not exist in {ws.name}", "give an existing version"
        )
    vs_baseline = req.vs_baseline
    base = _baseline(records)
    if vs_baseline is None and req.median is not None:
        if base is None:
            vs_baseline = 1.0  # the first unmasked record is the baseline
        else:
            bm = _to_us(base["performance"]["median"], base["performance"]["unit"])
            if bm is not None:
                vs_baseline = round(bm / (req.median * _UNIT_TO_US[req.unit]), 6)
    profile: dict[str, Any] = copy.deepcopy(req.profile) if req.profile else {}
    profile.pop("kernel", None)  # a BottleneckVerdict names the kernel; the workspace already does
    profile.pop("next_measurements", None)
    if req.verdict is not None:
        profile["verdict"] = req.verdict
    profile.setdefault("verdict", None)
    record: dict[str, Any] = {
        "schema_version": 1,
        "version": version,
        "parent": parent,
        "created": now_iso(),
        "updated": None,
        "plan": req.plan,
        "change": req.change,
        "kernel_file": ws.kernel_file,
        "correctness": {
            "passed": req.correct,
            "max_rel_err": req.max_rel_err,
            "tolerance": req.tolerance,
            "command": req.check_command,
        },
        "performance": {
            "median": req.median,
            "spread_pct": req.spread_pct,
            "unit": req.unit,
            "samples": req.samples,
            "vs_baseline": vs_baseline,
            "expected_speedup": req.expected_speedup,
            "source": req.perf_source,
        },
        "profile": profile,
        "pitfalls_and_fixes": [_parse_pitfall(p) for p in req.pitfall],
        "notes": req.notes,
        "masked": False,
        "mask_reason": None,
        "commit": None,
    }
    name = rel(ws, memory_path(ws, version))
    validate_record(record, name)  # fail before touching git
    if req.commit:
        gitops.git(ws.path, "add", "-A", "--", ".", ":(exclude)memory")
        gitops.git(ws.path, "commit", "-q", "--no-verify", "--allow-empty", "-m", f"v{version}: {req.change}")
        record["commit"] = gitops.head(ws.path)
    target = memory_path(ws, version)
    if not create_json_exclusive(target, record):
        raise StateError(
            f"memory version v{version} was created by another writer meanwhile",
            "re-run `kernelpilot memory create` (it takes the next free version)",
        )
    path = rel(ws, target)
    head = gitops.commit_all(ws.path, f"memory v{version}: {req.change}", [path]) if req.commit else None
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=head)


def memory_read(req: MemoryReadRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    if req.version is None:
        records = [r for r in load_all(ws) if not r["masked"]]
        if not records:
            raise MemoryVersionError(
                f"workspace {ws.name} has no unmasked memory versions",
                "record one with `kernelpilot memory create`",
            )
        record = records[-1]
    else:
        record = load_record(ws, req.version)
        if record["masked"] and not req.include_masked:
            raise MemoryVersionError(
                f"memory version v{req.version} is masked (skipped by reads)",
                "pass --include-masked to read it anyway, or `kernelpilot memory unmask`",
            )
    path = rel(ws, memory_path(ws, int(record["version"])))
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=None)


def _deep_merge(base: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in patch.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def memory_update(req: MemoryUpdateRequest) -> MemoryRecordResult:
    ws = locate(req.workspace, req.root)
    record = load_record(ws, req.version)
    frozen = [k for k in _FROZEN_KEYS if k in req.patch]
    if frozen:
        raise InvalidArgumentError(
            f"--patch may not change {', '.join(frozen)}", "use `kernelpilot memory mask/unmask` for masking"
        )
    updated = _deep_merge(record, req.patch)
    updated["updated"] = now_iso()
    path, head = _write(
        ws, updated, f"memory v{req.version}: update {', '.join(sorted(req.patch))}", req.commit
    )
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=updated, commit=head)


def _set_mask(
    ws: Workspace, version: int, masked: bool, reason: str | None, commit: bool
) -> MemoryRecordResult:
    record = load_record(ws, version)
    record["masked"] = masked
    record["mask_reason"] = reason if masked else None
    record["updated"] = now_iso()
    verb = "mask" if masked else "unmask"
    path, head = _write(ws, record, f"memory: {verb} v{version}" + (f" ({reason})" if reason else ""), commit)
    return MemoryRecordResult(workspace=str(ws.path), path=path, record=record, commit=head)


def memory_mask(req: MemoryMaskRequest) -> MemoryRecordResult:
    return _set_mask(locate(req.workspace, req.root), req.version, True, req.reason, req.commit)


def memory_unmask(req: MemoryUnmaskRequest) -> MemoryRecordResult:
    return _set_mask(locate(req.workspace, req.root), req.version, False, None, req.commit)


def summarize(ws: Workspace, records: list[dict[str, Any]], include_masked: bool) -> MemorySummaryResult:
    entries: list[SummaryEntry] = []
    masked: list[int] = []
    best: tuple[float, int] | None = None
    for r in records:
        if r["masked"]:
            masked.append(int(r["version"]))
            if not include_masked:
                continue
        perf, corr = r["performance"], r["correctness"]
        entries.append(
            SummaryEntry(
                version=r["version"],
                parent=r["parent"],
                change=r["change"],
                passed=corr["passed"],
                max_rel_err=corr["max_rel_err"],
                median=perf["median"],
                unit=perf["unit"],
                spread_pct=perf["spread_pct"],
                vs_baseline=perf["vs_baseline"],
                expected_speedup=perf.get("expected_speedup"),
                verdict=r["profile"].get("verdict"),
                masked=r["masked"],
                commit=r["commit"],
            )
        )
        med_us = _to_us(perf["median"], perf["unit"])
        if (
            not r["masked"]
            and med_us is not None
            and corr["passed"] is not False
            and (best is None or med_us < best[0])
        ):
            best = (med_us, int(r["version"]))
    unmasked = [int(r["version"]) for r in records if not r["masked"]]
    return MemorySummaryResult(
        workspace=str(ws.path),
        entries=entries,
        masked_versions=masked,
        baseline_version=unmasked[0] if unmasked else None,
        best_version=best[1] if best else None,
        latest_version=unmasked[-1] if unmasked else None,
    )


def memory_summary(req: MemorySummaryRequest) -> MemorySummaryResult:
    ws = locate(req.workspace, req.root)
    return summarize(ws, load_all(ws), req.include_masked)


def memory_restart(req: MemoryRestartRequest) -> MemoryRestartResult:
    ws = locate(req.workspace, req.root)
    records = load_all(ws)
    doomed = [r for r in records if r["version"] >= req.from_version]
    if not doomed:
        raise MemoryVersionError(
            f"no memory version >= v{req.from_version} in {ws.name}",
            "list versions with `kernelpilot memory summary`",
        )
    dirty = gitops.dirty_entries(ws.path)
    if dirty:
        shown = "; ".join(d.strip() for d in dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise DirtyTreeError(
            f"workspace {ws.name} has uncommitted changes ({shown}); a restart would overwrite them",
            "commit them (or record them with `kernelpilot memory create`), or discard them "
            "with git, then retry",
        )
    survivors = [r for r in records if r["version"] < req.from_version and not r["masked"]]
    kernel = ws.kernel_file
    if survivors:
        src = survivors[-1]
        if not src["commit"]:
            raise StateError(
                f"v{src['version']} has no recorded commit, so its kernel cannot be restored",
                "restart from a version recorded with commit on, or restore the kernel by hand",
            )
        restored_version: int | None = int(src["version"])
        commit = str(src["commit"])
        kernel = str(src.get("kernel_file") or kernel)
    else:
        restored_version = None
        roots = gitops.git(ws.path, "rev-list", "--max-parents=0", "HEAD").stdout.split()
        commit = roots[-1]
    if not gitops.commit_exists(ws.path, commit, kernel):
        raise StateError(
            f"commit {commit[:12]} does not hold {kernel}",
            "check `git log` in the workspace; the history was rewritten",
        )
    masked: list[int] = []
    try:
        gitops.restore_file(ws.path, commit, kernel)
        for r in doomed:
            if not r["masked"]:
                r["masked"] = True
                r["mask_reason"] = req.reason or f"partial restart from v{req.from_version}"
                r["updated"] = now_iso()
                path = memory_path(ws, int(r["version"]))
                validate_record(r, rel(ws, path))
                write_json_atomic(path, r)
                masked.append(int(r["version"]))
        src_name = f"v{restored_version}" if restored_version is not None else "initial kernel"
        head = gitops.commit_all(
            ws.path,
            f"restart from v{req.from_version}: mask {', '.join(f'v{v}' for v in masked) or 'nothing'}, "
            f"restore {kernel} from {src_name}",
            allow_empty=True,
        )
    except BaseException:
        gitops.reset_hard(ws.path)
        raise
    return MemoryRestartResult(
        workspace=str(ws.path),
        masked=masked,
        restored_version=restored_version,
        restored_commit=commit,
        kernel_file=kernel,
        commit=head,
    )
