"""Benchmark: gpu-wiki load + one lookup, cold, in a fresh Python process each run.

Each run starts a new interpreter which imports kernelpilot.wiki, loads the wiki (bundled + --wiki dirs)
and looks up bf16_dense_tflops of H100. Reported figure: load + lookup time measured inside that process
(perf_counter around load_wiki + lookup; the interpreter start and the import are reported separately).
Goal: <= 50 ms. Usage: python bench/wiki_lookup.py [--runs 20] [--wiki DIR ...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from kernelpilot.wiki import load_wiki
t1 = time.perf_counter()
wiki = load_wiki([Path(p) for p in sys.argv[1:]])
cv = wiki.lookup("H100", "bf16_dense_tflops")
t2 = time.perf_counter()
print(json.dumps({"import_ms": (t1 - t0) * 1e3, "load_lookup_ms": (t2 - t1) * 1e3, "gpus": len(wiki.gpus),
                  "specs": sum(len(g.specs) for g in wiki.gpus.values()), "citation": cv.citation()}))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--wiki", action="append", default=[])
    args = ap.parse_args()
    wikis = list(args.wiki)
    bundled = ROOT / "gpu-wiki-index"
    if not (bundled / "nvidia" / "h100-sxm5.md").is_file() and not wikis:
        wikis = [str(ROOT / "tests" / "fixtures" / "wiki" / "wikidata-copy" / "gpu-wiki-index")]
        print(f"bundled wiki empty on this branch; using {wikis[0]}")
    env_path = str(ROOT / "server")
    rows = []
    walls = []
    for _ in range(args.runs):
        t = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, *wikis],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        )
        walls.append((time.perf_counter() - t) * 1e3)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    ll = sorted(r["load_lookup_ms"] for r in rows)
    imp = sorted(r["import_ms"] for r in rows)
    print(f"wiki: {rows[0]['gpus']} GPUs, {rows[0]['specs']} cited values; {rows[0]['citation']}")
    print(f"import kernelpilot.wiki: median {statistics.median(imp):.1f} ms")
    print(f"whole process (interpreter + import + load + lookup): median {statistics.median(walls):.1f} ms")
    spread = (ll[-1] - ll[0]) / statistics.median(ll) * 100
    print(
        f"figure={statistics.median(ll):.2f} ms wiki load + lookup, cold in a fresh process "
        f"(median of {len(ll)}, spread min {ll[0]:.2f} .. max {ll[-1]:.2f} ms = {spread:.0f}%)"
    )


if __name__ == "__main__":
    main()
