"""The speed-up ratios a memory record stores (`vs_parent`, `vs_baseline`) and how each was obtained.

Why here and once: the profile-optimizer skill judges an iteration by its paired eval verdict (baseline and
candidate timed interleaved on one machine), never by dividing medians; issue 32 found memory and the final
report dividing medians from different machines ("0.97x, missed" where the paired eval said 0.990x
neutral). `memory create` derives each ratio here, with a basis string that says `paired: ...` or
`unpaired: ...` and why; reports print what was stored (`workspace.report`). The record that is the
workspace baseline (kind `baseline`, `baseline_of`) anchors `vs_baseline`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import ToolchainError
from kernelpilot.workspace import gitops

UNIT_TO_US = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


@dataclass
class Ratio:
    value: float | None
    basis: str | None

    @property
    def paired(self) -> bool:
        return self.value is not None and (self.basis or "").startswith("paired")


def kind_of(record: dict[str, Any]) -> str:
    """baseline, iteration or exploration (records written before kinds are iterations)."""
    return str(record.get("kind") or "iteration")


def baseline_of(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The workspace baseline: the first unmasked record of kind baseline, else the first unmasked record
    that is not an exploration (workspaces recorded before kinds)."""
    unmasked = [r for r in records if not r["masked"]]
    named = [r for r in unmasked if kind_of(r) == "baseline"]
    rest = [r for r in unmasked if kind_of(r) != "exploration"]
    found = named or rest
    return found[0] if found else None


def machine_of(env: Any) -> str | None:
    """GPU names, driver and platform of an eval file's `environment` (None when it names none)."""
    if not isinstance(env, dict):
        return None
    gpus = [g for g in env.get("gpus") or [] if isinstance(g, dict)]
    names = sorted({str(g["name"]) for g in gpus if g.get("name")})
    drivers = sorted({str(g["driver_version"]) for g in gpus if g.get("driver_version")})
    platform = env.get("platform")
    if not names and not platform:
        return None
    return f"{' + '.join(names) or 'no GPU'}; driver {', '.join(drivers) or '?'}; {platform or '?'}"


def baseline_commit_of(result: Path, data: dict[str, Any]) -> str | None:
    """The commit a candidate eval was paired against: result.json does not name it, the task's
    baseline.json beside it does (when it is not newer than the result: a later refresh replaced it)."""
    if isinstance(data.get("baseline_commit"), str):
        return str(data["baseline_commit"])
    sibling = result.parent / "baseline.json"
    try:
        base = json.loads(sibling.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # none beside it (a copied result): pairing unverified
        return None
    if not isinstance(base, dict) or not isinstance(base.get("commit"), str):
        return None
    if str(base.get("created") or "") > str(data.get("created") or "~"):
        return None
    return str(base["commit"])


def median_us(record: dict[str, Any]) -> float | None:
    perf = record["performance"]
    return None if perf.get("median") is None else float(perf["median"]) * UNIT_TO_US[perf["unit"]]


def _same_kernel(ws_path: Any, kernel_file: str, commit: str | None, parent: dict[str, Any]) -> bool | str:
    """True when the eval's baseline commit holds the parent's kernel, else why it could not be shown."""
    theirs = parent.get("commit")
    if not commit:
        return "the eval names no baseline commit"
    if not theirs:
        return f"v{parent['version']} was recorded without a commit to compare the kernel with"
    try:
        for c in (commit, theirs):
            if gitops.git(ws_path, "cat-file", "-e", f"{c}^{{commit}}", check=False).returncode != 0:
                return f"commit {c[:12]} is not in the workspace repository"
        diff = gitops.git(ws_path, "diff", "--quiet", commit, theirs, "--", kernel_file, check=False)
    except ToolchainError as exc:  # git missing or timed out: the pairing cannot be verified
        return f"git could not compare the kernels ({exc.message})"
    if diff.returncode == 0:
        return True
    return f"the eval's baseline commit {commit[:12]} holds another {kernel_file} than v{parent['version']}"


def _divided(ref: dict[str, Any], med: float | None, machine: str | None, why: str) -> Ratio:
    """ref median / this median, only where both were measured on the same machine (or cannot be told)."""
    ref_med = median_us(ref)
    v = ref["version"]
    if ref_med is None or med is None:
        return Ratio(None, f"unpaired: {why}; no median of v{v} and this version to divide")
    theirs = ref["performance"].get("machine")
    if machine and theirs and machine != theirs:
        return Ratio(
            None,
            f"unpaired: {why}; medians from different machines (v{v}: {theirs}; this: {machine}) are not "
            "divided: time both in one paired eval",
        )
    where = "the same machine" if machine and theirs else "machine not recorded for both"
    return Ratio(round(ref_med / med, 6), f"unpaired: {why}; v{v} median / this median ({where})")


def vs_parent(
    ws: Any,
    parent: dict[str, Any] | None,
    verdict: dict[str, Any] | None,
    med: float | None,
    machine: str | None,
) -> Ratio:
    """The paired eval verdict when its baseline held the parent's kernel, else the medians (`_divided`)."""
    if parent is None:
        return Ratio(None, None)
    why = "no eval verdict (--eval-result) for this version"
    if verdict is not None and verdict.get("status") != "baseline":
        speedup = verdict.get("speedup")
        if verdict.get("method") != "paired" or not isinstance(speedup, (int, float)) or speedup <= 0:
            why = f"the eval was {verdict.get('method') or 'not paired'} (status {verdict.get('status')})"
        else:
            same = _same_kernel(ws.path, ws.kernel_file, verdict.get("baseline_commit"), parent)
            head = f"paired: eval verdict {verdict.get('status')} {speedup:.4g}x"
            if same is True:
                commit = str(verdict.get("baseline_commit"))[:12]
                return Ratio(
                    round(float(speedup), 6),
                    f"{head} vs its baseline commit {commit}, v{parent['version']}'s kernel",
                )
            if not str(same).startswith("the eval's baseline commit"):
                return Ratio(
                    round(float(speedup), 6), f"{head} (not verified to be v{parent['version']}: {same})"
                )
            why = str(same)
    return _divided(parent, med, machine, why)


def vs_baseline(
    base: dict[str, Any] | None,
    parent: dict[str, Any] | None,
    to_parent: Ratio,
    med: float | None,
    machine: str | None,
) -> Ratio:
    """1 for the baseline; the paired ratio to a parent that is the baseline; a paired ratio chained onto
    the parent's paired vs_baseline; else the medians (see `_divided`)."""
    if base is None:
        return Ratio(1.0 if med is not None else None, "this version is the baseline")
    bv = base["version"]
    if parent is not None and to_parent.paired:
        if parent["version"] == bv:
            return to_parent
        pperf = parent["performance"]
        if pperf.get("vs_baseline") and str(pperf.get("vs_baseline_basis") or "").startswith("paired"):
            up, step = float(pperf["vs_baseline"]), float(to_parent.value or 0)
            return Ratio(
                round(up * step, 6),
                f"paired verdicts chained: v{parent['version']} {up:.4g}x over v{bv} times this {step:.4g}x "
                f"over v{parent['version']}",
            )
        why = f"v{parent['version']} has no paired ratio to v{bv} to chain onto"
    else:
        why = "no paired verdict to chain to the baseline"
    return _divided(base, med, machine, why)
