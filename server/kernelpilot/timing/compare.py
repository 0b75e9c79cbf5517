"""The `time_compare` capability (`kernelpilot compare`): two launch-closure factories timed together.

Loads the two sides apart (each side's root first on `sys.path` only while its factory is imported and
called; the modules it imported are then set aside under a side-specific name, so a baseline tree and a
candidate tree that both hold `kern.py` do not share one), checks that they return the same output shapes
and dtypes, times them in ABBA blocks with clock sampling (`timing.paired`, `timing.clocks`) and judges the
median per-pair ratio. When asked (`observe`), a `kernelpilot.guard.observe.Watch` is created before the
factories load and each side's GPU work is observed after timing (docs/eval-design.md, "The seam").
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import DeviceUnavailableError, InputFileError, KernelpilotError
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.timing import clocks, environment, paired
from kernelpilot.timing.callables import _cuda_torch, build_closures, load_factory
from kernelpilot.timing.models import CompareRequest, CompareResult
from kernelpilot.timing.stats import judge_ratios, summarize


def _root(raw: str | None, default: Path) -> Path:
    if raw is None:
        return default
    p = Path(raw).expanduser()
    if not p.is_dir():
        raise InputFileError(f"side root {raw!r} is not a directory", "give an existing directory")
    return p.resolve()


def load_side(spec: str, root: Path, label: str, rotate: int) -> list[Callable[[], Any]]:
    """Import `spec` under `root` and build its closures, keeping its modules apart from the other side's."""
    before = set(sys.modules)
    entry = str(root)
    sys.path.insert(0, entry)
    try:
        factory = load_factory(spec, root)
        closures = build_closures(factory, rotate, {"root": entry} if _takes_root(factory) else None)
    except KernelpilotError as exc:
        exc.message = f"side {label}: {exc.message}"
        raise
    finally:
        if entry in sys.path:
            sys.path.remove(entry)
        set_aside(before, root, label)
    return closures


def _takes_root(factory: Callable[..., Any]) -> bool:
    """A factory with a `root` keyword (kernelpilot.guard.timed:make) is told its side's root."""
    try:
        return "root" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False  # a builtin or C callable without a signature: no keywords passed


# Folders whose modules are installed libraries, even inside a side's root (a project's own `.venv`).
LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})


def set_aside(before: set[str], root: Path, label: str) -> None:
    """Modules imported since `before` from `root` move to `_kernelpilot_side_<label>.<name>`, so the next
    import of the same name (the other side's, or `guard.checked`'s timing after its checks) is fresh.

    Libraries stay, shared by both sides as they should be: kernelpilot's own modules, and any module
    installed in a site-packages folder, even one inside the root (a `.venv` in the repository: torch or
    numpy imported a second time in one process would break)."""
    tag = "".join(ch if ch.isalnum() else "_" for ch in label)
    for name in sorted(set(sys.modules) - before):
        if name == "kernelpilot" or name.startswith("kernelpilot."):
            continue
        mod = sys.modules.get(name)
        file = getattr(mod, "__file__", None)
        if not file:
            continue
        path = Path(file).resolve()
        try:
            inside = path.relative_to(root)
        except ValueError:
            continue  # a library the side imported (torch, triton): shared
        if LIBRARY_DIRS.intersection(inside.parts):
            continue  # an installed library in an environment inside the root
        sys.modules[f"_kernelpilot_side_{tag}.{name}"] = sys.modules.pop(name)


def _guard_observe() -> Any | None:
    """`kernelpilot.guard.observe` when it is installed (the guard package), else None."""
    try:
        found = importlib.util.find_spec("kernelpilot.guard.observe")
    except ModuleNotFoundError:
        return None
    return importlib.import_module("kernelpilot.guard.observe") if found is not None else None


def _as_dict(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "model_dump"):
        return dict(obj.model_dump(mode="json"))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return dataclasses.asdict(obj)
    return dict(obj) if isinstance(obj, dict) else {"value": repr(obj)}


def _options(req: CompareRequest) -> paired.Options:
    return paired.Options(
        min_pairs=req.min_pairs,
        max_pairs=max(req.max_pairs, req.min_pairs),
        max_wall_s=req.max_wall_s,
        target_halfwidth=req.target_halfwidth,
        policy=clocks.ThrottlePolicy(
            threshold=req.throttle_threshold, recovery_budget_s=req.recovery_budget_s
        ),
    )


def compare_sides(
    a: paired.Side, b: paired.Side, req: CompareRequest, torch: Any | None, progress: Progress = no_progress,
    *, started: float | None = None, watch: Any | None = None, observer: Any | None = None,
    clock_source: clocks.ClockSource | None = None,
) -> CompareResult:  # fmt: skip
    """Time two loaded sides paired and judge them (the bench and `eval` call this with their own sides)."""
    started = time.perf_counter() if started is None else started
    sync = torch.cuda.synchronize if torch is not None else (lambda: None)
    sig = paired.check_comparable(a, b, sync)
    _refuse_if_seen(watch, "seen before the timing started; nothing was timed")
    try:
        return _timed(a, b, req, torch, progress, sig, started, watch, observer, clock_source)
    except KernelpilotError as exc:
        _refuse_if_seen(watch, f"and the timing then failed: {exc.message}", exc)
        raise


def _refuse_if_seen(watch: Any | None, why: str, cause: BaseException | None = None) -> None:
    """A replaced timer or a started thread ends the comparison before (or instead of) a figure.

    Why before timing: timing with a replaced event timer only measures the hack, and one that reads
    ~0 calibrates the spin hold thousands of times too long (`timing.gpu.SpinHold`), so the timing
    process would hang until its caller's timeout. The typed `GuardFindingsError` is what eval reads
    from the process's output to reject the candidate (`guard.steps.findings_rejection`)."""
    from kernelpilot.guard.errors import GuardFindingsError

    if watch is None or isinstance(cause, GuardFindingsError) or getattr(watch, "ended", True):
        return  # no watch, already reported, or ended (its findings are in the candidate's observation)
    if not (watch.replaced() or watch.started):
        return
    raise GuardFindingsError.of(watch.findings(), why) from cause


def _timed(
    a: paired.Side, b: paired.Side, req: CompareRequest, torch: Any | None, progress: Progress, sig: Any,
    started: float, watch: Any | None, observer: Any | None, clock_source: clocks.ClockSource | None,
) -> CompareResult:  # fmt: skip
    opt = _options(req)
    timer: paired.BlockTimer
    if torch is not None:
        timer = paired.gpu_timer(
            torch, a, b, req.timing, warmup=req.warmup, warmup_min_s=req.warmup_min_ms / 1000.0,
            use_graph=req.graph,
        )  # fmt: skip
    else:
        t0 = time.perf_counter()
        for _ in range(3):
            a.call()
            b.call()
        timer = paired.CpuBlockTimer(a, b, (time.perf_counter() - t0) / 6)
    source = clock_source if clock_source is not None else clocks.open_source(torch)
    sampler = clocks.ClockSampler(source, req.clock_period_ms / 1000.0)
    ref = source.max_sm_mhz if source is not None else None
    try:
        with sampler:
            run = paired.run_blocks(
                timer, sampler, opt, ref, progress=lambda n, total: progress(n, total, f"{n} pairs")
            )
    finally:
        if source is not None:
            source.close()
    observations, findings = _observe(observer, watch, torch, a, b, _side_medians(run))
    return _result(req, a, b, timer, run, sig, clocks.evidence(sampler, run.spans, run.log, opt.policy),
                   torch, started, observations, findings)  # fmt: skip


def _side_medians(run: paired.PairedRun) -> tuple[float | None, float | None]:
    """Each side's median sample: the figure its observation is judged against (guard.observe.judge);
    None without kept blocks (no figure: the observation traces, and the result then fails)."""
    if not run.blocks:
        return None, None
    a = statistics.median(x for blk in run.blocks for x in blk.a)
    return a, statistics.median(x for blk in run.blocks for x in blk.b)


def _observe_side(
    observer: Any, torch: Any, side: paired.Side, timed_us: float | None, watch: Any | None
) -> Any:
    try:
        return observer.observe(torch, side.closures, 10, timed_us=timed_us, watch=watch)
    except KernelpilotError:
        raise
    except Exception as exc:  # the side's closure (or the GPU) failed while being observed: name the side
        raise paired.side_error(side.label, exc, "observation") from exc


def _observe(
    observer: Any | None, watch: Any | None, torch: Any | None, a: paired.Side, b: paired.Side,
    medians: tuple[float | None, float | None],
) -> tuple[dict[str, dict[str, Any]] | None, list[str] | None]:  # fmt: skip
    """Each side's observation right after the timed pairs (guard.observe), the watch's findings put into
    the candidate's (B's) with `with_findings`, which ends the watch. Without a GPU there is no activity
    trace, but the timed outputs (`observe.sampled`) and the watch's findings still are observed."""
    if observer is None:
        return None, (list(watch.findings()) if watch is not None else None)
    if torch is None and hasattr(observer, "unobserved"):
        why = "no torch with a GPU: no activity trace to observe (CPU timing)"
        obs_a, obs_b = (_unobserved_side(observer, why, side) for side in (a, b))
    elif torch is None:
        return None, (list(watch.findings()) if watch is not None else None)
    else:
        obs_a, obs_b = (
            _observe_side(observer, torch, s, m, watch) for s, m in zip((a, b), medians, strict=True)
        )
    if watch is not None and hasattr(observer, "with_findings"):
        obs_b = observer.with_findings(obs_b, watch)
        out_b = _as_dict(obs_b)
        found = out_b.get("watch_findings")
        return {a.label: _as_dict(obs_a), b.label: out_b}, list(found) if isinstance(found, list) else None
    findings = list(watch.findings()) if watch is not None else None
    return {a.label: _as_dict(obs_a), b.label: _as_dict(obs_b)}, findings


def _unobserved_side(observer: Any, why: str, side: paired.Side) -> Any:
    obs = observer.unobserved(why, None)
    return observer.sampled(obs, side.closures)


def _result(
    req: CompareRequest, a: paired.Side, b: paired.Side, timer: paired.BlockTimer, run: paired.PairedRun,
    sig: Any, ev: Any, torch: Any | None, started: float, observations: dict[str, dict[str, Any]] | None,
    findings: list[str] | None,
) -> CompareResult:  # fmt: skip
    if not run.blocks:
        raise DeviceUnavailableError(
            f"every paired block was dropped for throttling ({len(run.log.dropped)} blocks): no verdict",
            "let the GPU cool (or give it more recovery budget) and compare again",
        )
    a_s = [x for blk in run.blocks for x in blk.a]
    b_s = [x for blk in run.blocks for x in blk.b]
    med: float | None = None
    ci: list[float] | None = None
    ratios: list[float] = []  # none where a side timed at <= 0 us (its block ratios are NaN)
    invalid = paired.non_positive(run.blocks, a.label, b.label)
    if invalid is not None:  # no ratio to judge; the samples, observations and findings are still reported
        verdict, note = "unstable", invalid
    else:
        med, lo, hi, verdict = judge_ratios(
            run.ratios, "lower", req.min_effect, req.ci_halfwidth_max, req.placement_allowance
        )
        ci, ratios, note = [lo, hi], run.ratios, _verdict_note(req, b.label, verdict, med, lo, hi)
    env = environment.capture()
    if torch is not None:
        env["torch_device"] = str(torch.cuda.get_device_name())
    return CompareResult(
        a=req.a, b=req.b, label_a=a.label, label_b=b.label, timer=timer.method, timer_note=timer.note,
        verdict_mode=req.timing if torch is not None else "cpu",
        ratio_median=med, ratio_ci=ci, confidence=0.95, speedup=None if med is None else 1.0 / med,
        verdict=verdict, verdict_note=note, min_effect=req.min_effect, pairs=len(run.blocks),
        rounds=run.rounds, stop_reason=run.stop_reason, a_stats=summarize(a_s), b_stats=summarize(b_s),
        a_samples=a_s, b_samples=b_s, ratios=ratios, launches_per_sample=list(timer.launches),
        gap_free=timer.gap_free, output_signature=str(sig), clocks=ev, wall_s=time.perf_counter() - started,
        observations=observations, watch_findings=findings, environment=env,
    )  # fmt: skip


def _verdict_note(req: CompareRequest, label_b: str, verdict: str, med: float, lo: float, hi: float) -> str:
    """What the judged verdict means, with the numbers it was judged on."""
    beyond = (
        f"by at least the minimum effect {req.min_effect:.1%} (CI widened by the placement allowance "
        f"{req.placement_allowance:.1%})"
    )
    notes = {
        "improved": f"{label_b} is faster: the whole CI is below 1 {beyond}",
        "regressed": f"{label_b} is slower: the whole CI is above 1 {beyond}",
        "neutral": f"no change of at least {req.min_effect:.1%} resolved: the CI, widened by "
        f"{req.placement_allowance:.1%}, reaches into the minimum-effect band (CI half-width "
        f"{(hi - lo) / 2 / med:.2%})",
        "unstable": f"the ratio is not resolved: CI half-width {(hi - lo) / 2 / med:.2%} > "
        f"{req.ci_halfwidth_max:.1%}; compare again (longer, or on a quieter GPU)",
    }
    return notes[verdict]


def time_compare(
    req: CompareRequest, progress: Progress = no_progress, *, watch: Any | None = None
) -> CompareResult:
    """Load both factories apart, then `compare_sides`. `watch`: a `guard.observe.Watch` already running
    (`guard.checked` started it before the guard's checks imported the candidate), used instead of a new
    one when the request observes."""
    started = time.perf_counter()
    wd = Path(req.workdir).expanduser()
    if not wd.is_dir():
        raise InputFileError(f"workdir {req.workdir!r} is not a directory", "give an existing directory")
    wd = wd.resolve()
    root_a, root_b = _root(req.root_a, wd), _root(req.root_b, wd)
    torch = None if req.device == "cpu" else _cuda_torch()
    if req.device == "cuda" and torch is None:
        raise DeviceUnavailableError(
            "device='cuda' asked for but torch with a GPU (CUDA or ROCm) is not available",
            "run on a GPU machine, or use --device cpu / auto for the labelled CPU fallback",
        )
    observer = _guard_observe() if req.observe else None
    if observer is None:
        watch = None
    elif watch is None:
        watch = observer.Watch()  # before either factory is loaded
    cwd = os.getcwd()
    a = paired.Side(req.label_a, load_side(req.a, root_a, req.label_a, req.rotate))
    b = paired.Side(req.label_b, load_side(req.b, root_b, req.label_b, req.rotate))
    os.chdir(cwd)
    return compare_sides(a, b, req, torch, progress, started=started, watch=watch, observer=observer)
