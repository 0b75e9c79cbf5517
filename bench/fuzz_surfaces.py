"""Benchmark: mutate the real inputs of every surface of issues 34 and 41 and run each through the real CLI.

Usage: python bench/fuzz_surfaces.py [--cases N] [--only NAME ...] [--jobs J] [--seed S]
For each surface in tests/fuzz/surface_targets.py (Kineto trace, rocprofv3 trace/stats CSV, nsys stats
CSVs, workload diff, guard contract, task.json, task ledger, sweep spec and ledger, memory file, exp import
and ingest; issue 41: output paths of every writing command, the citation audit, gzip traces, ncu raw
pages, in tests/fuzz/surfaces_41.py), N cases: 1-3 mutations of a real seed (byte flips, insertions,
deletions, JSON value swaps and the hostile changes of `surface_targets._hostile`), drawn from
`random.Random(seed, surface, case)` so a case replays. Each case runs `kernelpilot.adapters.cli.main(argv)`
(what the `kernelpilot` command runs) in a child forked from a warm process (so 1,000s of cases fit: no
interpreter start per case), with its
own stdout/stderr files, a 30 s limit (then SIGKILL: a hang) and an address-space limit (a MemoryError or
a kill by the kernel: a memory kill); J children at once (default: the CPU count).
Outcomes per surface: ok (exit 0), typed (exit 1/2 with `kernelpilot: error:` and a fix), traceback,
hang, memory kill, changed (a failed command changed a guarded store or file; on issue 41's strict surfaces
any command that changed anything but its one expected output), wrong (issue 41: a hostile output path
written or a legitimate one refused, an audit verdict that differs from the oracle), other.
Last line: figure=<tracebacks + hangs + memory kills + changed + wrong + other> (cases, surfaces, slowest).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "server"))
sys.path.insert(0, str(REPO / "tests" / "fuzz"))

LIMIT_S = 30.0
MEMORY_BYTES = 8 * 2**30  # address space of one case: a reader that reads /dev/zero whole dies here
OUTCOMES = ("ok", "typed", "traceback", "hang", "memory", "changed", "wrong", "other")
_KINDS = ("hostile", "hostile", "flip", "insert", "delete")


def _plan(surface: Any, seed: int, case: int) -> tuple[Path, list[tuple[str, int, int, bytes]]]:
    rng = random.Random(f"{seed}/{surface.name}/{case}")
    kinds = _KINDS + (("json",) if surface.json else ())
    ops = [
        (rng.choice(kinds), rng.randint(0, 1 << 24), rng.randint(0, 1 << 16), bytes([rng.randint(0, 255)]))
        for _ in range(rng.randint(1, 3))
    ]
    return rng.choice(surface.seeds), ops


def _child(argv: list[str], tmp: Path) -> None:
    """In the forked child: the CLI's main with its output in files; never returns."""
    code = 70
    try:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
        out = os.open(tmp / "stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(tmp / "stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.chdir(tmp)
        from kernelpilot.adapters.cli import main

        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
        except MemoryError:
            sys.stderr.write("\nMEMORY-ERROR\n")
            code = 71
        except BaseException:  # an uncaught exception is what the bench counts: print it as Python would
            import traceback

            traceback.print_exc()
            code = 70
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _wait(pid: int) -> tuple[int | None, float]:
    """(wait status, seconds); None when it outlived LIMIT_S and was killed."""
    t0 = time.monotonic()
    pause = 0.002
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status, time.monotonic() - t0
        if time.monotonic() - t0 > LIMIT_S:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, time.monotonic() - t0
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def run_case(name: str, seed: int, case: int) -> tuple[str, str, float, str]:
    """(surface, outcome, seconds, detail) of one case in a fresh temp folder."""
    from surface_targets import BY_NAME, apply

    surface = BY_NAME[name]
    seed_path, ops = _plan(surface, seed, case)
    data = apply(seed_path, ops)
    tmp = Path(tempfile.mkdtemp(prefix="kp-fs-"))
    try:
        surface.setup(tmp)
        argv = surface.cli(data, tmp)
        before = surface.guarded(tmp)  # after the case is set up: what it made is not a change
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, tmp)
        status, secs = _wait(pid)
        err = (tmp / "stderr").read_text(errors="replace") if (tmp / "stderr").exists() else ""
        if status is None:
            return name, "hang", secs, f"case {case}: {argv[:2]}"
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            kind = "memory" if sig == signal.SIGKILL else "other"
            return name, kind, secs, f"case {case}: killed by signal {sig}"
        rc = os.WEXITSTATUS(status)
        if rc == 71 or "MemoryError" in err:
            return name, "memory", secs, f"case {case}: {err[-300:]}"
        if "Traceback (most recent call last)" in err:
            return name, "traceback", secs, f"case {case}: {err[-1200:]}"
        if (rc != 0 or surface.strict) and surface.guarded(tmp) != before:
            return name, "changed", secs, f"case {case}: {surface.guarded(tmp)} {err[:300]}"
        if surface.verdict is not None:  # issue 41: the outcome against what the case expects
            wrong = surface.verdict(tmp, rc, err)
            if wrong:
                return name, "wrong", secs, f"case {case}: {argv[:2]} {wrong}"
            return name, "typed" if "kernelpilot: error:" in err else "ok", secs, ""
        if rc == 0 or (rc == 3 and argv[0] == "eval"):  # 3: eval recorded a non-verdict status (by design)
            return name, "ok", secs, ""
        if rc in (1, 2) and "kernelpilot: error:" in err:
            return name, "typed", secs, ""
        return name, "other", secs, f"case {case}: exit {rc}: {err[-500:]}"
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _warm() -> None:
    """Import what the commands import, once per worker, before the first fork."""
    import kernelpilot.adapters.cli
    import kernelpilot.experiments.ops
    import kernelpilot.isa.core
    import kernelpilot.profile.core
    import kernelpilot.roofline.core
    import kernelpilot.sweep.run
    import kernelpilot.tasks.evaluate
    import kernelpilot.wiki.audit
    import kernelpilot.workload.core
    import kernelpilot.workload.readers.kineto
    import kernelpilot.workload.readers.tables
    import kernelpilot.workspace.memory  # noqa: F401
    from kernelpilot.adapters.cli import build_parser

    build_parser(["workload", "read"])  # the capability registry and its models, imported once
    # `sweep run` opens a Dask cluster: its import is most of a sweep case's time (absent: nothing to warm)
    with contextlib.suppress(ImportError):
        import dask.distributed  # noqa: F401


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--cases", type=int, default=1000, help="cases per surface (default 1000)")
    ap.add_argument("--only", nargs="*", help="surface names (default: all)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--max-seconds", type=float, default=0, help="stop after this long (0: run every case)")
    args = ap.parse_args()
    from surface_targets import SURFACES

    names = [s.name for s in SURFACES if not args.only or s.name in args.only]
    print(
        f"machine: {platform.node()} {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {args.jobs} cases at once, {LIMIT_S:.0f} s and "
        f"{MEMORY_BYTES // 2**30} GiB address space per case",
        flush=True,
    )
    counts = {n: dict.fromkeys(OUTCOMES, 0) for n in names}
    slowest: dict[str, float] = dict.fromkeys(names, 0.0)
    examples: dict[str, list[str]] = {n: [] for n in names}
    t0 = time.monotonic()
    stopped = False
    with ProcessPoolExecutor(args.jobs, mp_context=get_context("fork"), initializer=_warm) as pool:
        futs = [pool.submit(run_case, n, args.seed, i) for i in range(args.cases) for n in names]
        for k, fut in enumerate(as_completed(futs), 1):
            if args.max_seconds and not stopped and time.monotonic() - t0 > args.max_seconds:
                stopped = True
                for f in futs:
                    f.cancel()  # cases are interleaved by surface: each surface stops at about the same count
            if fut.cancelled():
                continue
            name, outcome, secs, detail = fut.result()
            counts[name][outcome] += 1
            slowest[name] = max(slowest[name], secs)
            if (
                detail
                and outcome not in ("ok", "typed")
                and (
                    len(examples[name]) < 3 or outcome in ("traceback", "hang", "memory", "changed", "wrong")
                )
            ):
                examples[name].append(f"{outcome}: {detail}")
            if k % 1000 == 0:
                print(f"  {k} of {len(futs)} cases, {time.monotonic() - t0:.0f} s", flush=True)
    print(f"{'surface':<20}" + "".join(f"{o:>10}" for o in OUTCOMES) + f"{'max s':>8}")
    for n in names:
        print(f"{n:<20}" + "".join(f"{counts[n][o]:>10}" for o in OUTCOMES) + f"{slowest[n]:>8.1f}")
    for n in names:
        for ex in examples[n]:
            print(f"  {n}: " + ex.replace("\n", "\n      ")[:1500])
    bad = sum(
        counts[n][o] for n in names for o in ("traceback", "hang", "memory", "changed", "wrong", "other")
    )
    total = sum(sum(c.values()) for c in counts.values())
    fewest = min(sum(counts[n].values()) for n in names)
    worst = max(names, key=lambda n: slowest[n])
    print(
        f"figure={bad} tracebacks, hangs, memory kills, changed files, wrong outcomes or other exits "
        f"(in {total} cases, {len(names)} surfaces, >= {fewest} each; {time.monotonic() - t0:.0f} s; "
        f"slowest case {slowest[worst]:.1f} s ({worst}))"
    )


if __name__ == "__main__":
    main()
