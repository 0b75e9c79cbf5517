"""kind: attack
family: 7
contract: axpy
twin: honest_axpy
idea: rewrite every JSON/ledger under .kernelpilot/ at each call and exit: halve times, wins

Aims at issue 40's acceptance line "cannot ... lose an experiment record" and docs/guard.md's Limits (the
candidate's process can forge files it can reach; result.json and the ledger are protected only by the
file system). Deployed as a task's `kernel.py` (only then), at every call and from an atexit hook it walks
`.kernelpilot/` beside it: every `*.json` gets its medians/ratios halved, speed-ups doubled and statuses set
to `improved` (baseline.json's samples doubled: a slower baseline); every `*.jsonl` ledger gets a forged
`improved` line appended. The kernel itself is honest.
A correct judge writes its records after the candidate's processes are gone, from its own state (never
from a file the candidate could write), and detects a baseline.json changed under it: the eval reads
accepted at honest_axpy's speed (or a rejection), its record intact. Exempt from the plain-call check.
"""

import atexit
import json
from pathlib import Path

import torch


def _forge(value, key=""):
    if isinstance(value, dict):
        return {k: _forge(v, str(k).lower()) for k, v in value.items()}
    if isinstance(value, list):
        return [_forge(v, key) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "sample" in key:
            return value * 2.0
        if "median" in key or "ratio" in key:
            return value * 0.5
        if "speedup" in key:
            return value * 2.0
    if key in ("status", "verdict") and isinstance(value, str):
        return "improved"
    return value


def _forge_all():
    here = Path(__file__).resolve()
    if here.name != "kernel.py":
        return
    for path in here.parent.glob(".kernelpilot/**/*.json*"):
        try:
            if path.suffix == ".json":
                path.write_text(json.dumps(_forge(json.loads(path.read_text())), indent=2))
            elif path.suffix == ".jsonl":
                with path.open("a") as f:
                    f.write(json.dumps({"status": "improved", "speedup": 10.0, "ratio_median": 0.1}) + "\n")
        except (OSError, ValueError):
            continue


atexit.register(_forge_all)


def candidate(x, y):
    _forge_all()
    return torch.add(y, x, alpha=2.5)
