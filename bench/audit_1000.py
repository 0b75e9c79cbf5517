"""Benchmark: audit a workspace holding 1,000 citations (50 Markdown + JSON files) against the wiki.

990 citations are correct and 10 forged (so the git-history check for stale vs forged runs too).
Reported figure: in-process time of `audit_paths` including the wiki load, median of N runs. Goal: <= 1 s.
Usage: python bench/audit_1000.py [--runs 10] [--wiki DIR]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "server"))

from kernelpilot.wiki import audit_paths, load_wiki  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument(
        "--wiki", default=str(ROOT / "tests" / "fixtures" / "wiki" / "wikidata-copy" / "gpu-wiki-index")
    )
    args = ap.parse_args()
    root = Path(args.wiki)
    wiki = load_wiki([root], include_bundled=False)
    values = [cv for g in sorted(wiki.gpus) for cv in wiki.specs(g)]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        n = 0
        for f in range(50):
            cites = []
            for _ in range(20):
                cv = values[n % len(values)]
                text = cv.citation()
                if n % 100 == 7 and not isinstance(cv.value, str):
                    text = text.replace(f": {cv.written_value()} ", f": {cv.number() * 1.1:.4g} ", 1)
                cites.append(text)
                n += 1
            if f % 2:
                (ws / f"notes{f}.json").write_text(json.dumps({"citations": cites}, indent=1))
            else:
                (ws / f"plan{f}.md").write_text("# plan\n\n" + "\n".join(f"- {c}" for c in cites) + "\n")
        times = []
        res = None
        for _ in range(args.runs):
            t = time.perf_counter()
            res = audit_paths([ws], load_wiki([root], include_bundled=False))
            times.append((time.perf_counter() - t) * 1e3)
        assert res is not None
        print(
            f"checked {res.citations_checked} citations in {res.files_scanned} files: {res.citations_ok} ok, "
            f"{len(res.problems)} problems ({', '.join(sorted({p.kind for p in res.problems}))})"
        )
        ts = sorted(times)
        print(
            f"figure={statistics.median(ts):.1f} ms audit of 1000 citations incl. wiki load "
            f"(median of {len(ts)}, spread min {ts[0]:.1f} .. max {ts[-1]:.1f} ms)"
        )


if __name__ == "__main__":
    main()
