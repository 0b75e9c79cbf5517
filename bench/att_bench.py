"""`profile att` throughput and memory on a >= 1 GB ATT dispatch folder; wall time on the big real fixture.

Inputs: tests/fixtures/profile/att/big/ui_output_agent_38430_dispatch_44 (real rocprofv3 1.1.0 capture on an
MI350X, 32 per-wave files, 8.6 MB). The large folder is synthesized in a temp dir (deleted after): the
real folder plus copies of its 32 per-wave files under new wave ids, listed in filenames.json, until it holds
>= 1 GB (real byte copies, not links). Each large run is a fresh child process (cold interpreter, warm page
cache) that reports its own wall time and peak RSS (ru_maxrss). Last line: figure=... (median of N, spread).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "server"))

from kernelpilot.profile.att.analysis import profile_att  # noqa: E402
from kernelpilot.profile.att.models import AttRequest  # noqa: E402

BIG = ROOT / "tests/fixtures/profile/att/big/ui_output_agent_38430_dispatch_44"
TARGET_BYTES = 1_050_000_000
RUNS_SMALL = 15
RUNS_LARGE = 3
CPU_RATES: list[float] = []  # MB per CPU-second of the many-waves runs (the machine may be shared)

CHILD = """
import json, resource, sys, time
sys.path.insert(0, sys.argv[2])
from kernelpilot.profile.att.analysis import profile_att
from kernelpilot.profile.att.models import AttRequest
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t, c = time.perf_counter(), time.process_time()
r = profile_att(AttRequest(path=sys.argv[1]))
wall, cpu = time.perf_counter() - t, time.process_time() - c
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"wall_s": wall, "cpu_s": cpu, "peak_kb": peak, "base_kb": base,
                  "waves": r.totals.waves_sampled,
                  "insts": r.totals.instructions_executed}))
"""


def folder_bytes(p: Path) -> int:
    return sum(f.stat().st_size for f in p.iterdir() if f.is_file())


def synthesize(dst: Path) -> int:
    shutil.copytree(BIG, dst)
    names = json.loads((dst / "filenames.json").read_text())
    tree = names["wave_filenames"]
    originals = []  # (se, sm, sl, file, begin, end)
    for se, sms in tree.items():
        for sm, sls in sms.items():
            for sl, wvs in sls.items():
                for _, entry in wvs.items():
                    originals.append((se, sm, sl, entry[0], entry[1], entry[2]))
    total = folder_bytes(dst)
    copy = 0
    while total < TARGET_BYTES:
        copy += 1
        for se, sm, sl, fname, begin, end in originals:
            new = f"se{se}_sm{sm}_sl{sl}_wv{copy}.json"
            shutil.copyfile(dst / fname, dst / new)
            tree[se][sm][sl][str(copy)] = [new, begin, end]
            total += (dst / new).stat().st_size
    (dst / "filenames.json").write_text(json.dumps(names))
    return folder_bytes(dst)


def one_huge_wave(dst: Path) -> int:
    """Replace one per-wave file by a single >= 1 GB wave (its instruction list repeated), streamed alone."""
    shutil.copytree(BIG, dst)
    name = "se0_sm0_sl1_wv0.json"
    doc = json.loads((dst / name).read_bytes())
    recs = json.dumps(doc["wave"]["instructions"], separators=(",", ":"))[1:-1].encode()
    reps = TARGET_BYTES // len(recs) + 1
    head, _, tail = json.dumps(doc, separators=(",", ":")).partition('"instructions":')
    after = tail[tail.index("]],") + 2 :]
    doc_n = doc["num_insts"] * reps
    head = head.replace(f'"num_insts":{doc["num_insts"]}', f'"num_insts":{doc_n}', 1)
    with (dst / name).open("wb") as fh:
        fh.write(head.encode() + b'"instructions":[')
        for i in range(reps):
            fh.write(recs if i == 0 else b"," + recs)
        fh.write(b"]" + after.encode())
    return folder_bytes(dst)


def run_child(dst: Path, size: int, label: str, rates: list[float], peaks: list[float]) -> None:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(dst), str(ROOT / "server")],
        capture_output=True,
        text=True,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    rates.append(size / 1e6 / got["wall_s"])
    if label.startswith("many"):
        CPU_RATES.append(size / 1e6 / got["cpu_s"])
    peaks.append(got["peak_kb"] / 1024)
    print(
        f"{label}: {got['wall_s']:.2f} s, {rates[-1]:.0f} MB/s "
        f"({size / 1e6 / got['cpu_s']:.0f} MB/s of CPU time, "
        f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cpus), peak RSS {peaks[-1]:.0f} MB "
        f"(after imports {got['base_kb'] / 1024:.0f} MB), waves {got['waves']}, instructions {got['insts']}"
    )


def main() -> None:
    print(
        f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cpus, "
        f"Python {platform.python_version()}"
    )
    times = []
    profile_att(AttRequest(path=str(BIG)))  # warm-up (imports, page cache)
    for _ in range(RUNS_SMALL):
        t0 = time.perf_counter()
        res = profile_att(AttRequest(path=str(BIG)))
        times.append(time.perf_counter() - t0)
    small_med = statistics.median(times)
    small_spread = (max(times) - min(times)) / small_med * 100
    print(
        f"big fixture ({folder_bytes(BIG) / 1e6:.1f} MB, {res.totals.waves_sampled} waves): median "
        f"{small_med:.3f} s over {RUNS_SMALL} runs (min {min(times):.3f} max {max(times):.3f}); goal <= 0.5 s"
    )
    with tempfile.TemporaryDirectory(prefix="kp-att-bench-") as tmp:
        dst = Path(tmp) / BIG.name
        t0 = time.perf_counter()
        size = synthesize(dst)
        print(
            f"synthesized {size / 1e9:.2f} GB ({len(list(dst.glob('se*.json')))} wave files) in "
            f"{time.perf_counter() - t0:.1f} s"
        )
        rates: list[float] = []
        peaks: list[float] = []
        for i in range(RUNS_LARGE):
            run_child(dst, size, f"many waves, run {i + 1}", rates, peaks)
        shutil.rmtree(dst)
        size1 = one_huge_wave(dst)
        print(
            f"synthesized one {size1 / 1e9:.2f} GB folder whose wave se0_sm0_sl1_wv0.json alone is "
            f"{(dst / 'se0_sm0_sl1_wv0.json').stat().st_size / 1e9:.2f} GB"
        )
        rates1: list[float] = []
        run_child(dst, size1, "one huge wave", rates1, peaks)
    med = statistics.median(rates)
    spread = (max(rates) - min(rates)) / med * 100
    print(
        f"figure={med:.0f} MB/s (median of {RUNS_LARGE}, spread {spread:.0f}%, {size / 1e9:.2f} GB folder, "
        f"{statistics.median(CPU_RATES):.0f} MB/s of CPU time, "
        f"peak RSS max {max(peaks):.0f} MB, goal >= 100 MB/s and <= 400 MB); big fixture "
        f"{small_med:.3f} s (median of {RUNS_SMALL}, spread {small_spread:.0f}%)"
    )


if __name__ == "__main__":
    main()
