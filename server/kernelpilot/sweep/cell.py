"""What a Dask worker runs for one cell (variant x shape): correctness check first, then timing.

A cell whose output is not within tolerance of its reference is returned as `incorrect` and never
timed, so it cannot count as a win. A factory, closure or command that raises gives a `crashed` cell
carrying the exception; the driver decides what to record. Input in and result out are plain dicts
(cheap to pickle). What does not belong to one cell is kept per worker process and reused by every cell
of a variant: the loaded factory modules and their signatures, torch and its CUDA context, the profiler
(`warm_worker` loads them all before the first cell). Each cell reports where its time went
(`models.CellPhases`: load, build, check, timing) for the run's timeline (`sweep.timeline`).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.sweep.models import CellOutcome, CellPhases, CellTiming, Shape, VariantSpec

_FACTORIES: dict[tuple[str, str], Callable[..., Any]] = {}
_PARAMS: dict[Callable[..., Any], tuple[set[str], bool]] = {}


@contextlib.contextmanager
def _phase(ph: CellPhases, name: str) -> Iterator[None]:
    """Add the block's wall time to `ph.<name>` (also when it raises)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        setattr(ph, name, getattr(ph, name) + time.perf_counter() - t0)


def _factory(target: str, root: Path, ph: CellPhases | None = None) -> Callable[..., Any]:
    """The factory `target` names, loaded once per worker process (its load time counted in `ph`)."""
    key = (target, str(root))
    fn = _FACTORIES.get(key)
    if fn is None:
        from kernelpilot.timing.callables import load_factory

        with _phase(ph or CellPhases(), "load_s"):
            fn = load_factory(target, root)
        _FACTORIES[key] = fn
    return fn


def _call(fn: Callable[..., Any], shape: Shape) -> Any:
    """Call a factory with the shape fields it accepts (all of them for **kwargs) and a per-shape seed."""
    params = _PARAMS.get(fn)
    if params is None:
        from kernelpilot.sweep.spec import required_params

        _req, accepted_names, takes_kw = required_params(fn)
        params = _PARAMS[fn] = (accepted_names, takes_kw)
    accepted, var_kw = params
    kwargs = shape.kwargs()
    if not var_kw:
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
    if "seed" in accepted and "seed" not in kwargs:
        kwargs["seed"] = int(shape.key[:8], 16)
    return fn(**kwargs)


def _to_array(x: Any) -> Any:
    import numpy as np

    if hasattr(x, "detach"):  # a torch tensor: bf16/fp8 have no numpy dtype, compare in fp64
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


def _compare_torch(o: Any, r: Any, atol: float, rtol: float) -> tuple[bool, float, float] | str:
    """Two torch tensors compared on the output's device in fp64 (no copy of a large GPU output to host), in
    one pass of elementwise ops and one device-to-host read: what `torch.allclose(equal_nan=True)` decides,
    with the largest absolute and relative errors over the finite entries."""
    torch: Any = importlib.import_module("torch")  # the outputs are torch tensors: torch is there
    if tuple(o.shape) != tuple(r.shape):
        return f"shape {tuple(o.shape)}, reference {tuple(r.shape)}"
    if o.numel() == 0:
        return True, 0.0, 0.0
    a, b = o.detach().double(), r.detach().to(o.device).double()
    fa, fb = torch.isfinite(a), torch.isfinite(b)
    both = fa & fb
    zero = torch.zeros((), dtype=a.dtype, device=a.device)
    diff = torch.where(both, (a - b).abs(), zero)
    mag_b = b.abs()
    # finite entries within atol + rtol |b|; the others equal (inf) or both NaN, as allclose(equal_nan) has it
    close = torch.where(both, diff <= atol + rtol * mag_b, (a == b) | (torch.isnan(a) & torch.isnan(b)))
    rel = diff / torch.where(both, mag_b, zero).clamp_min(1e-30)
    figures = torch.stack(
        [diff.max(), rel.max(), close.all().to(a.dtype), (fa == fb).all().to(a.dtype)]
    ).tolist()
    ma, mr, ok, same_finite = figures
    if not same_finite:
        return "NaN/inf where the reference has none"
    return bool(ok), float(ma), float(mr)


def compare(out: Any, ref: Any, atol: float, rtol: float) -> tuple[bool, float, float, str]:
    """(within tolerance, max abs error, max relative error, note) of an output against its reference."""
    import numpy as np

    outs = list(out) if isinstance(out, list | tuple) else [out]
    refs = list(ref) if isinstance(ref, list | tuple) else [ref]
    if len(outs) != len(refs):
        return False, float("inf"), float("inf"), f"{len(outs)} outputs vs {len(refs)} in the reference"
    ok, max_abs, max_rel = True, 0.0, 0.0
    for i, (o, r) in enumerate(zip(outs, refs, strict=True)):
        if hasattr(o, "detach") and hasattr(r, "detach"):
            res = _compare_torch(o, r, atol, rtol)
            if isinstance(res, str):
                return False, float("inf"), float("inf"), f"output {i}: {res}"
            good, ma, mr = res
            ok, max_abs, max_rel = ok and good, max(max_abs, ma), max(max_rel, mr)
            continue
        a, b = _to_array(o), _to_array(r)
        if a.shape != b.shape:
            return False, float("inf"), float("inf"), f"output {i} has shape {a.shape}, reference {b.shape}"
        if a.size == 0:
            continue
        if not np.all(np.isfinite(a) == np.isfinite(b)):
            return False, float("inf"), float("inf"), f"output {i} has NaN/inf where the reference has not"
        fin = np.isfinite(b)
        diff = np.abs(a[fin] - b[fin])
        if diff.size:
            max_abs = max(max_abs, float(diff.max()))
            max_rel = max(max_rel, float((diff / np.maximum(np.abs(b[fin]), 1e-30)).max()))
        ok = ok and bool(np.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))
    note = "" if ok else f"max abs err {max_abs:.3g} exceeds atol {atol:g} + rtol {rtol:g} x |reference|"
    return ok, max_abs, max_rel, note


def _check(v: VariantSpec, closures: list[Any], shape: Shape, root: Path, out: CellOutcome) -> bool:
    """Run the closure once against the reference; False (and the cell `incorrect`) when it differs."""
    assert v.reference is not None
    ph = out.phases
    ref = _factory(v.reference, root, ph)
    with _phase(ph, "check_s"):
        try:
            got = closures[0]()
            expected = _call(ref, shape)()
        except Exception as exc:
            raise _Crash(f"correctness run raised {type(exc).__name__}: {exc}") from exc
        try:
            ok, out.max_abs_err, out.max_rel_err, out.check_note = compare(got, expected, v.atol, v.rtol)
        except Exception as exc:  # an output numpy/torch cannot compare (odd type, device error): crashed
            raise _Crash(
                f"comparing the output with the reference raised {type(exc).__name__}: {exc}"
            ) from exc
    out.correct = ok
    if not ok:
        out.state = "incorrect"
    return ok


def _factory_cell(v: VariantSpec, shape: Shape, root: Path, p: dict[str, Any], out: CellOutcome) -> None:
    from kernelpilot.sweep.timing_adapter import time_cell

    assert v.factory is not None
    ph = out.phases
    fn = _factory(v.factory, root, ph)
    with _phase(ph, "build_s"):
        try:
            made = _call(fn, shape)
        except KernelpilotError:
            raise
        except Exception as exc:
            raise _Crash(f"factory {v.factory} raised {type(exc).__name__}: {exc}") from exc
    closures = list(made) if isinstance(made, list | tuple) else [made]
    if not closures or not all(callable(c) for c in closures):
        raise _Crash(f"factory {v.factory} returned {type(made).__name__}, not a zero-argument closure")
    if v.reference is not None and not _check(v, closures, shape, root, out):
        return
    base = VariantSpec.model_validate(p["baseline_spec"]) if p.get("baseline_spec") else None
    if base is not None and base.factory is not None:
        out.timing = _paired_timing(base, closures, shape, root, p, ph)
        return
    try:
        with _phase(ph, "timing_s"):
            out.timing = time_cell(
                lambda: closures,
                mode=p["mode"],
                runs=p["runs"],
                warmup=p["warmup"],
                device="cpu" if p["device"] == "cpu" else "auto",
                cv_threshold=p["cv_threshold"],
            )
    except KernelpilotError:
        raise
    except Exception as exc:
        raise _Crash(f"timed closure raised {type(exc).__name__}: {exc}") from exc
    if out.timing.method == "cuda_event":
        out.device_name = out.timing.note.split("; ", 1)[-1]


def _paired_timing(
    base: VariantSpec, closures: list[Any], shape: Shape, root: Path, p: dict[str, Any], ph: CellPhases
) -> CellTiming:
    """The candidate timed together with the baseline variant at this shape (sweep/timing_adapter.py)."""
    from kernelpilot.sweep.timing_adapter import time_cell_paired

    assert base.factory is not None
    try:
        fn = _factory(base.factory, root, ph)
        with _phase(ph, "build_s"):
            made = _call(fn, shape)
        base_closures = list(made) if isinstance(made, list | tuple) else [made]
        with _phase(ph, "timing_s"):
            return time_cell_paired(
            base_closures, closures, name=p["variant"], mode=p["mode"], runs=p["runs"],
            device="cpu" if p["device"] == "cpu" else "auto", cv_threshold=p["cv_threshold"],
            parity=p["parity"],
        )  # fmt: skip
    except KernelpilotError:
        raise
    except Exception as exc:  # the baseline's factory or either closure raised: a crashed cell
        raise _Crash(f"paired timing raised {type(exc).__name__}: {exc}") from exc


def _command_cell(v: VariantSpec, shape: Shape, root: Path, p: dict[str, Any], out: CellOutcome) -> None:
    from kernelpilot.sweep.timing_adapter import time_command, time_command_paired
    from kernelpilot.timing import instrumentation
    from kernelpilot.timing.commands import extract_metric, run_command

    assert v.command is not None
    argv = [a.format(**shape.kwargs()) for a in v.command]
    ph = out.phases
    if v.error_regex is not None:
        with _phase(ph, "check_s"):
            first = run_command(argv, cwd=root, env=instrumentation.stripped(), timeout_s=v.timeout_s)
            err = extract_metric(first.stdout, first.stderr, regex=v.error_regex, json_key=None)
        out.max_abs_err = err
        out.correct = abs(err) <= v.atol
        if not out.correct:
            out.state = "incorrect"
            out.check_note = f"printed error {err:.3g} exceeds atol {v.atol:g}"
            return
    base = VariantSpec.model_validate(p["baseline_spec"]) if p.get("baseline_spec") else None
    if base is not None and base.command is not None:
        # the candidate alternated with the baseline variant's command at this shape (paired)
        with _phase(ph, "timing_s"):
            out.timing, _tail = time_command_paired(
                [a.format(**shape.kwargs()) for a in base.command], argv, cwd=root, runs=p["runs"],
                warmup=p["warmup"], timeout_s=max(v.timeout_s, base.timeout_s),
                metric=(base.metric_regex, base.metric_json_key, v.metric_regex, v.metric_json_key),
                direction=p["direction"], parity=p["parity"], cv_threshold=p["cv_threshold"],
            )  # fmt: skip
        return
    with _phase(ph, "timing_s"):
        out.timing, _tail = time_command(
            argv, cwd=root, runs=p["runs"], warmup=p["warmup"], timeout_s=v.timeout_s,
            regex=v.metric_regex, json_key=v.metric_json_key, cv_threshold=p["cv_threshold"],
        )  # fmt: skip


class _Crash(Exception):
    """A user factory/closure/command failed: becomes a crashed cell, never a worker error."""


def _worker_address() -> str:
    """The Dask worker running this task ('' outside one: a cell called directly)."""
    distributed = sys.modules.get("distributed")  # a worker has it; importing it here would cost 1-2 s
    if distributed is None:
        return ""
    try:
        return str(distributed.get_worker().address)
    except ValueError:  # not inside a worker: no address to report
        return ""


def _warm_torch(note: list[str]) -> None:
    """torch imported, the CUDA context made, the profiler (CUPTI) loaded: what a first cell would pay."""
    from kernelpilot.timing.callables import _cuda_torch

    torch = _cuda_torch()
    if torch is None:
        note.append("no torch with a GPU: CPU timing")
        return
    import kernelpilot.timing.compare
    import kernelpilot.timing.gpu  # noqa: F401  (the timing loop's modules, imported once here)
    from kernelpilot.timing.kernels import traced

    torch.cuda.init()
    torch.empty(1, device="cuda").zero_()
    torch.cuda.synchronize()
    try:
        traced(torch, lambda: torch.empty(1, device="cuda").zero_(), cpu=False)
    except Exception as exc:  # a profiler that cannot start here: the cold timer falls back on its own
        note.append(f"profiler warm-up failed ({type(exc).__name__}: {str(exc)[:120]})")
    note.append(f"CUDA ready on {torch.cuda.get_device_name()}")


def warm_worker(payload: dict[str, Any]) -> dict[str, Any]:
    """Run once on every worker before the cells (Dask `client.run`): load each factory module named in
    `payload["targets"]` (relative to `payload["root"]`) and, unless `payload["device"]` is cpu and when a
    factory variant needs it, torch and its CUDA context. Returns {"warm_s", "note"}; a factory that fails
    to load here is left for its cells to report, as they would without the warm-up."""
    t0 = time.perf_counter()
    note: list[str] = []
    root = Path(payload["root"])
    # what time_cell / time_cell_paired / time_command import on first use: once here, before the cells
    for mod in ("callables", "compare", "paired", "stats", "core", "commands", "clocks"):
        importlib.import_module(f"kernelpilot.timing.{mod}")

    for target in payload.get("targets", []):
        try:
            _factory(target, root)
        except KernelpilotError as exc:
            note.append(f"{target}: {exc.message[:120]}")
    if payload.get("torch"):
        try:
            _warm_torch(note)
        except Exception as exc:  # torch or the GPU failing here fails the cells too, each with its reason
            note.append(f"CUDA warm-up failed ({type(exc).__name__}: {str(exc)[:120]})")
    return {"warm_s": time.perf_counter() - t0, "note": "; ".join(note)}


def run_cell(payload: dict[str, Any]) -> dict[str, Any]:
    """The Dask task of one cell: `payload` from the driver, returns a `CellOutcome` as a dict."""
    t0 = time.perf_counter()
    started = time.time()
    v = VariantSpec.model_validate(payload["variant_spec"])
    shape = Shape.model_validate(payload["shape"])
    root = Path(payload["root"])
    out = CellOutcome(
        variant=payload["variant"],
        shape_key=shape.key,
        state="timed",
        worker_pid=os.getpid(),
        worker_host=socket.gethostname(),
        visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES") or os.environ.get("HIP_VISIBLE_DEVICES"),
        worker=_worker_address(),
    )
    out.phases.started_unix = started
    try:
        if v.factory is not None:
            _factory_cell(v, shape, root, payload, out)
        else:
            _command_cell(v, shape, root, payload, out)
    except _Crash as exc:
        out.state, out.error = "crashed", str(exc)
    except KernelpilotError as exc:
        out.state, out.error = "crashed", f"{type(exc).__name__}: {exc}"
    out.wall_s = time.perf_counter() - t0
    out.phases.ended_unix = started + out.wall_s
    return out.model_dump(mode="json")
