"""The child process that applies the launch-overhead remedies to a step closure and times each against eager
(`python -m kernelpilot.workload.remedies_child`; `workload.remedies` runs it and reads its JSON).

Why a child: torch.compile and graph capture run the user's code with its CUDA context apart from
kernelpilot (a crash or hang kills only the child), and a compile that outlives the time limit is killed
without losing what was measured before it: the JSON is rewritten after each remedy.

What it does: builds the step from the factory (the closure protocol of `kernelpilot time`), warms it up,
keeps eager's output, then per remedy: builds it (a CUDA/HIP graph of one step, captured after warm-up on a
side stream; `torch.compile(mode="reduce-overhead")`), checks its output equals eager's (bitwise, else within
the dtype's tolerance, noted: compile fuses and reorders, a library may pick another algorithm under
capture), and times it against
eager in ABBA blocks (`timing.paired.alternate_metrics`): a sample is k steps back to back then a
synchronize, host wall time / k, i.e. the step's period in a closed loop as the application sees it (a
GPU-side timer that queues launches ahead would hide the very launch overhead being removed). The ratio's
interval is `timing.stats.paired_ratio_ci`; each side's median gets the same bootstrap.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kernelpilot.workload.runner import EXIT_NO_GPU, EXIT_USER, torch_with_gpu

BLOCKS = 16  # ABBA blocks per comparison: 64 samples, a few seconds for a millisecond step
SAMPLE_S = 0.025  # about this much wall time per sample (k steps)
# dtype -> (rtol, atol) for outputs of a compiled step (fused kernels round differently)
TOLERANCE = {"bfloat16": (1.6e-2, 1e-2), "float16": (1e-3, 1e-3), "float32": (1.3e-6, 1e-5)}
REASON_CHARS = 700  # a failed remedy's `why` is at most this long (a lowering error's repr can be megabytes)
# lines of a compiler's message that say how to get more output rather than what went wrong
_BOILERPLATE = (
    "Set TORCHDYNAMO_VERBOSE",
    "For even more developer context",
    "You can suppress this exception",
    "torch._dynamo.config.suppress_errors",
    "import torch._dynamo",
    "Set TORCH_LOGS",
    "Use tlparse to see full graph",
)
# A compile that failed on a step run under torch.inference_mode: what to try. Seen on
# bench/workload_model.py's decode step: inductor failed on it under inference mode with torch 2.11 on the
# H100 (KeyError, a weakref to an UntypedStorage) and with torch 2.13 on the CPU ("Cannot set version_counter
# for inference tensor"), and compiled under torch.no_grad() (tests/fixtures/workload/compile_grad_mode/).
INFERENCE_MODE_HINT = (
    "the step runs under torch.inference_mode (its output is an inference tensor), where inductor is known "
    "to fail (pytorch/pytorch#169477); torch.no_grad() records no autograd either and launches the same "
    "kernels: run the step under it and try the remedies again"
)


def snapshot(torch: Any, out: Any) -> Any:
    """A copy of a step's output that later steps cannot overwrite (graph and compiled outputs are
    static buffers); tensors detached and cloned, containers copied, anything else as is."""
    if torch is not None and isinstance(out, torch.Tensor):
        return out.detach().clone()
    if isinstance(out, (list, tuple)):
        return (
            type(out)(snapshot(torch, x) for x in out)
            if isinstance(out, list)
            else tuple(snapshot(torch, x) for x in out)
        )
    if isinstance(out, dict):
        return {k: snapshot(torch, v) for k, v in out.items()}
    return out


def tensors_of(torch: Any, out: Any) -> list[Any]:
    """The tensors of a step's output, in containers walked as `snapshot` walks them."""
    if torch is not None and isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        return [t for x in out for t in tensors_of(torch, x)]
    return []


def runs_in_inference_mode(torch: Any, out: Any) -> bool:
    """Whether a step's output holds an inference tensor, i.e. the step ran under torch.inference_mode."""
    return any(t.is_inference() for t in tensors_of(torch, out))


def outputs_match(torch: Any, a: Any, b: Any, exact: bool) -> tuple[bool, float | None, str]:
    """(equal, largest |a − b| over tensors, tolerance used): tensors by shape, dtype and value (bitwise
    when `exact`, else `TOLERANCE` by dtype), containers element-wise, anything else by ==."""
    if torch is not None and isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False, None, "shape/dtype"
        diff = (a.double() - b.double()).abs().max().item() if a.numel() else 0.0
        if exact:
            return bool(torch.equal(a, b)), diff, "bitwise"
        rtol, atol = TOLERANCE.get(str(a.dtype).removeprefix("torch."), (1e-5, 1e-8))
        return bool(torch.allclose(a, b, rtol=rtol, atol=atol)), diff, f"rtol {rtol:g}, atol {atol:g}"
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False, None, "length"
        results = [outputs_match(torch, x, y, exact) for x, y in zip(a, b, strict=True)]
        diffs = [d for _, d, _ in results if d is not None]
        how = results[0][2] if results else ("bitwise" if exact else "==")
        return all(ok for ok, _, _ in results), max(diffs) if diffs else None, how
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False, None, "keys"
        return outputs_match(torch, [a[k] for k in a], [b[k] for k in a], exact)
    return bool(a == b), None, "=="


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what caused it, outermost first: `inner_exception` (torch._dynamo's BackendCompilerFailed and
    torch._inductor's InductorError keep the real error there and raise `from None`), else `__cause__`,
    else `__context__` (also when suppressed: the suppressed one is still what went wrong)."""
    chain, seen = [exc], {id(exc)}
    while len(chain) < 32:
        cur = chain[-1]
        inner = getattr(cur, "inner_exception", None)
        nxt = inner if isinstance(inner, BaseException) else (cur.__cause__ or cur.__context__)
        if nxt is None or id(nxt) in seen:
            break
        chain.append(nxt)
        seen.add(id(nxt))
    return chain


def _message_lines(exc: BaseException) -> list[str]:
    lines = [ln.strip() for ln in str(exc).splitlines()]
    return [ln for ln in lines if ln and not ln.startswith(_BOILERPLATE)]


def _bound(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = limit * 2 // 5
    return f"{text[:head]} … {text[-(limit - head - 3) :]}"


def failure_reason(exc: BaseException, limit: int = REASON_CHARS) -> str:
    """Why a remedy could not apply, at most `limit` characters: the chain's types (outermost first), then the
    innermost error's type and message: its first line and its last lines (a compiler puts the error last,
    after the graph or the command it ran), without the lines that only say how to get more output."""
    chain = exception_chain(exc)
    inner = chain[-1]
    lines = _message_lines(inner)
    if len(chain) > 1 and lines and lines[0].startswith(f"{type(inner).__name__}:"):
        lines[0] = lines[0].split(":", 1)[1].strip()  # a wrapper's message that repeats the inner type
    msg = " | ".join(lines if len(lines) <= 5 else [lines[0], "…", *lines[-4:]])
    outer = " → ".join(type(e).__name__ for e in chain[:-1])
    first = _message_lines(exc)[:1]
    if len(chain) > 1 and first and len(first[0]) <= 60:  # e.g. "backend='inductor' raised:"
        outer = outer.replace(type(exc).__name__, f"{type(exc).__name__} ({first[0]})", 1)
    text = f"{type(inner).__name__}: {msg}" if msg else type(inner).__name__
    return _bound(f"{outer} → {text}" if outer else text, limit)


def raised_at(exc: BaseException) -> str | None:
    """`file:line in function` of the innermost error's last frame (where the compiler gave up), or None."""
    import traceback

    tb = exception_chain(exc)[-1].__traceback__
    frames = traceback.extract_tb(tb) if tb is not None else []
    if not frames:
        return None
    f = frames[-1]
    parts = Path(f.filename).parts
    where = "/".join(parts[-3:]) if len(parts) > 3 else f.filename
    return f"{where}:{f.lineno} in {f.name}"


def step_period_us(step: Callable[[], Any], sync: Callable[[], None], k: int) -> float:
    """µs per step of k steps back to back, from the first call to the end of the last step's GPU work."""
    sync()
    t0 = time.perf_counter()
    for _ in range(k):
        step()
    sync()
    return (time.perf_counter() - t0) / k * 1e6


def _median_ci(xs: list[float]) -> dict[str, Any]:
    from kernelpilot.timing.stats import paired_ratio_ci

    med, lo, hi = paired_ratio_ci(xs)  # a bootstrap of the median: any positive samples
    return {"median_us": med, "ci_low_us": lo, "ci_high_us": hi, "samples": len(xs)}


def paired_timing(
    eager: Callable[[], Any],
    remedy: Callable[[], Any],
    sync: Callable[[], None],
    k: int,
    blocks: int = BLOCKS,
) -> dict[str, Any]:
    """Eager (A) and the remedy (B) in ABBA blocks; the medians, their intervals and the ratio B/A."""
    from kernelpilot.timing.paired import alternate_metrics
    from kernelpilot.timing.stats import paired_ratio_ci

    pairs = alternate_metrics(
        (lambda: step_period_us(eager, sync, k), lambda: step_period_us(remedy, sync, k)), blocks
    )
    ratio, lo, hi = paired_ratio_ci(pairs.ratios)
    a, b = _median_ci(pairs.a), _median_ci(pairs.b)
    return {
        "eager": a,
        "remedy": b,
        "ratio": ratio,
        "ratio_ci_low": lo,
        "ratio_ci_high": hi,
        "saving_us_per_step": a["median_us"] - b["median_us"],
    }


def graph_remedy(torch: Any, step: Callable[[], Any]) -> Callable[[], Any]:
    """The step captured once as a CUDA/HIP graph (after warm-up on a side stream, as torch.cuda.graphs
    asks); the remedy replays it and returns the captured output buffers."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()

    def replay() -> Any:
        graph.replay()
        return out

    return replay


def compile_remedy(torch: Any, step: Callable[[], Any], notes: list[str]) -> Callable[[], Any]:
    """`torch.compile(step, mode="reduce-overhead")`, compiled by its first calls (timed into `notes`), with
    the graph breaks and cudagraph skips dynamo and inductor counted."""
    counters = _counters()
    before = {k: dict(v) for k, v in counters.items()} if counters is not None else {}
    fn = torch.compile(step, mode="reduce-overhead")
    mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)

    def compiled() -> Any:
        if mark is not None:  # each call a new step: the previous step's output buffers may be reused
            mark()
        return fn()

    t0 = time.perf_counter()
    for _ in range(3):  # reduce-overhead records its graph on the calls after the first
        compiled()
    torch.cuda.synchronize()
    notes.append(f"compiled in {time.perf_counter() - t0:.1f} s (3 calls)")
    if counters is not None:
        breaks = sum(counters.get("graph_break", {}).values()) - sum(before.get("graph_break", {}).values())
        if breaks:
            notes.append(f"{breaks} graph break(s): {', '.join(list(counters['graph_break'])[:3])}")
        skips = {k: v for k, v in counters.get("inductor", {}).items() if "cudagraph_skip" in k}
        if skips:
            notes.append(f"inductor skipped CUDA graphs: {skips}")
    return compiled


def _counters() -> Any:
    try:
        # dynamo's own counter of graph breaks (torch._dynamo.explain would compile the step again)
        from torch._dynamo.utils import counters  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    return counters


def _remedy(
    torch: Any,
    name: str,
    build: Callable[[list[str]], Callable[[], Any]],
    eager: Callable[[], Any],
    reference: Any,
    k: int,
    hint: str | None = None,
) -> dict[str, Any]:
    """Build one remedy, check its output, time it paired; a failure is the remedy's, with why (and `hint`,
    what to try, when it could not apply)."""
    notes: list[str] = []
    res: dict[str, Any] = {"name": name, "status": "failed", "notes": notes}
    try:
        remedy = build(notes)
        out = snapshot(torch, remedy())
        torch.cuda.synchronize()
    except Exception as exc:  # the user's step under capture or compile: why it could not apply
        res["status"] = "not_applicable"
        res["why"] = failure_reason(exc)
        if (where := raised_at(exc)) is not None:
            notes.append(f"the innermost error was raised at {where}")
        if hint is not None:
            notes.append(hint)
        return res
    ok, diff, how = outputs_match(torch, reference, out, exact=True)
    if not ok:  # a library may pick another algorithm under capture or compile: equal within the dtype's
        ok, diff, how = outputs_match(torch, reference, out, exact=False)
        notes.append(f"output not bitwise equal to eager's (max |Δ| {diff}); compared within {how}")
    res.update(outputs_equal=ok, max_abs_diff=diff, tolerance=how)
    if not ok:
        res["why"] = f"its output differs from eager's ({how}; max |Δ| {diff})"
        return res
    try:
        res.update(paired_timing(eager, remedy, torch.cuda.synchronize, k))
    except Exception as exc:  # a replay or compiled call failing while timed
        res["why"] = f"timing failed: {failure_reason(exc)}"
        return res
    res["status"] = "measured"
    return res


def _write(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=1))
    tmp.replace(path)  # the parent reads a whole file even when it kills this process mid-write


def _args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m kernelpilot.workload.remedies_child")
    ap.add_argument("spec")
    ap.add_argument("--workdir", default=".")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--kwargs", default="{}")
    ap.add_argument("--out", required=True, help="JSON file, rewritten after each remedy")
    ap.add_argument("--skip", action="append", default=[], help="remedy names not to try")
    return ap.parse_args(argv)


def _setup(a: argparse.Namespace, torch: Any, doc: dict[str, Any]) -> tuple[Callable[[], Any], Any, int]:
    """The eager step (warmed up), its reference output, and k (steps per sample)."""
    from kernelpilot.timing.callables import build_closures, load_factory

    step = build_closures(load_factory(a.spec, Path(a.workdir)), 1, json.loads(a.kwargs))[0]
    for _ in range(max(a.warmup, 3)):
        step()
    torch.cuda.synchronize()
    out = step()
    doc["inference_mode"] = runs_in_inference_mode(torch, out)
    reference = snapshot(torch, out)
    torch.cuda.synchronize()
    one = min(step_period_us(step, torch.cuda.synchronize, 4) for _ in range(3))
    k = max(1, min(1000, int(SAMPLE_S * 1e6 / max(one, 1.0))))
    doc["eager_probe_us"] = one
    doc["steps_per_sample"] = k
    doc["torch"] = torch.__version__
    doc["gpu"] = torch.cuda.get_device_name()
    return step, reference, k


def main(argv: list[str] | None = None) -> int:
    a = _args(argv)
    out = Path(a.out)
    doc: dict[str, Any] = {"remedies": [], "notes": []}
    torch = torch_with_gpu("kernelpilot-remedies")
    if torch is None:
        return EXIT_NO_GPU
    try:
        step, reference, k = _setup(a, torch, doc)
    except Exception as exc:  # the user's factory or step raised: the parent reports it as CallableError
        print(f"kernelpilot-remedies: the step raised {type(exc).__name__}: {exc}", file=sys.stderr)
        return EXIT_USER
    _write(out, doc)
    builds: list[tuple[str, Callable[[list[str]], Callable[[], Any]]]] = [
        ("cuda_graph", lambda notes: graph_remedy(torch, step)),
        ("torch_compile_reduce_overhead", lambda notes: compile_remedy(torch, step, notes)),
    ]
    for name, build in builds:
        if name in a.skip:
            continue
        if name.startswith("torch_compile") and not hasattr(torch, "compile"):
            doc["remedies"].append(
                {
                    "name": name,
                    "status": "not_applicable",
                    "why": f"torch {torch.__version__} has no torch.compile (2.0+)",
                }
            )
        else:
            hint = INFERENCE_MODE_HINT if name.startswith("torch_compile") and doc["inference_mode"] else None
            doc["remedies"].append(_remedy(torch, name, build, step, reference, k, hint))
        _write(out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
