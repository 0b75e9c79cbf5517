"""Measure practical memory and matmul ceilings of a CUDA GPU with PyTorch, as `## Measured` wiki lines.

Owns only the measurement: device-to-device copy bandwidth (bytes read + bytes written), read-heavy
bandwidth (a sum reduction: bytes read), square matmul throughput per dtype (2·n³ FLOPs) on random
data, and the latency floor: the per-launch time of the smallest kernel (one fp32 element added in place),
the fixed cost below which no kernel of a stream runs however few bytes it moves (workload triage uses it as
`measured_min_kernel_us`, workload/trace_roofline.py). Each measurement: warm-up runs, then `runs` timed
samples of back-to-back launches taken by the timing engine's warm mode
(`kernelpilot.timing.gpu`: launches queued behind a spin hold, CUDA events,
direct launches, no graph); the value is the median throughput and the spread is
(p90 − p10)/median. Clocks, power limits and MIG are never touched. Needs a CUDA GPU and PyTorch
(DeviceUnavailableError otherwise).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import importlib
import re
import shlex
import statistics
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from kernelpilot.ceilings.models import CeilingsRequest, CeilingsResult, MeasuredRecord
from kernelpilot.foundation.atomic import output_path, write_text_atomic
from kernelpilot.foundation.errors import (
    DeviceUnavailableError,
    InvalidArgumentError,
    KernelpilotError,
)
from kernelpilot.foundation.progress import Progress, no_progress
from kernelpilot.roofline.core import LATENCY_METRIC  # read by the roofline's note and the workload triage

_MATMUL_DTYPES = ("bf16", "fp16", "fp32", "tf32", "fp8")


def _import_torch() -> Any:
    try:
        torch = importlib.import_module("torch")
    except ImportError as exc:
        raise DeviceUnavailableError(
            "`ceilings measure` needs PyTorch with CUDA, and `import torch` failed",
            "run it on a machine with an NVIDIA GPU and `pip install torch`",
        ) from exc
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(
            "`ceilings measure` needs a CUDA GPU: torch.cuda.is_available() is False",
            "run it on a machine with an NVIDIA GPU and a CUDA build of PyTorch",
        )
    return torch


def _percentile(sorted_vals: list[float], q: float) -> float:
    if len(sorted_vals) == 1:
        return sorted_vals[0]
    pos = q * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def _time_ms(torch: Any, fn: Callable[[], Any], runs: int, warmup: int) -> list[float]:
    """Per-launch GPU time (ms) of back-to-back launches: the `time` command's warm mode (launches queued
    behind a spin hold, a replayed graph where the work can be captured), so no launch gap is inside."""
    from kernelpilot.timing import gpu

    # No graph: a captured Tensor.copy_ becomes a memcpy node that ran on the copy engines at 2.44 TB/s
    # where the same copy launched on the stream moved 3.0 TB/s (H100, 2026-11-22/23).
    timings, _, _ = gpu.time_modes(
        torch, [fn], modes=["warm"], runs=runs, warmup=warmup, warmup_min_s=0.2, use_graph=False
    )
    return [us / 1000.0 for us in timings["warm"].samples_us]


def _stats(work: float, times_ms: list[float]) -> tuple[float, float]:
    """(median throughput in work/s, spread in %) from per-run times."""
    rates = sorted(work / (t * 1e-3) for t in times_ms if t > 0)
    if not rates:
        raise KernelpilotError("all timed runs reported 0 ms", "increase the problem size")
    med = statistics.median(rates)
    spread = 100.0 * (_percentile(rates, 0.9) - _percentile(rates, 0.1)) / med
    return med, spread


def _driver_version() -> str:
    from kernelpilot.foundation.errors import ToolchainError
    from kernelpilot.host.toolchain import find_tool, run

    smi = find_tool("nvidia-smi")
    if smi is None:
        return "unknown (nvidia-smi not found)"
    try:
        res = run(
            [str(smi), "--query-gpu=driver_version", "--format=csv,noheader"], timeout_s=30, check=False
        )
    except ToolchainError:
        return "unknown (nvidia-smi failed)"
    first = res.stdout.strip().splitlines()
    return first[0].strip() if res.returncode == 0 and first else "unknown"


def _resolve_gpu(req: CeilingsRequest, device_name: str) -> tuple[str, str]:
    from kernelpilot.wiki.core import load_wiki

    try:
        wiki = load_wiki([Path(d) for d in req.wiki])
    except KernelpilotError as exc:
        if req.gpu:
            return req.gpu, f"given (wiki not loaded: {exc.message})"
        return re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-"), "device name (no wiki)"
    if req.gpu:
        return wiki.resolve_gpu(req.gpu), f"given as {req.gpu!r}"
    try:
        return wiki.resolve_gpu(device_name), "device name matched a wiki alias"
    except KernelpilotError:
        pass
    ident = re.sub(r"[^a-z0-9]+", "-", device_name.lower()).strip("-")
    return ident, "no wiki alias equals the device name; id made from it (pass --gpu <wiki id> to file it)"


def _write_atomic(path: Path, text: str, mkdir: bool) -> None:
    write_text_atomic(path, text, arg="--out", mkdir=mkdir)  # the output-path policy: foundation.atomic


def _validate(req: CeilingsRequest) -> None:
    if req.runs < 3 or req.warmup < 0:
        raise InvalidArgumentError("--runs must be >= 3 and --warmup >= 0", "e.g. --runs 50 --warmup 10")
    if req.copy_mib <= 0:
        raise InvalidArgumentError(f"--copy-mib must be > 0, got {req.copy_mib}", "e.g. --copy-mib 2048")
    if not req.matmul_sizes or any(s <= 0 or s % 16 for s in req.matmul_sizes):
        raise InvalidArgumentError("--matmul-sizes must be positive multiples of 16", "e.g. 4096 8192 16384")
    bad = [d for d in req.dtypes if d not in _MATMUL_DTYPES]
    if bad:
        raise InvalidArgumentError(f"--dtypes: unknown {bad}", f"use {', '.join(_MATMUL_DTYPES)}")
    if req.out:  # before minutes of measuring: a FIFO, device or missing folder is refused now
        output_path(req.out, "--out", mkdir=req.mkdir)


def _command() -> str:
    """The command line that ran this, for the provenance of each line (quotes made single)."""
    argv = sys.argv[1:]
    if any(argv[i : i + 2] == ["ceilings", "measure"] for i in range(len(argv))):
        command = "kernelpilot " + " ".join(shlex.quote(a) for a in argv)
    else:
        command = "kernelpilot ceilings measure (via API/MCP)"
    return command.strip().replace('"', "'")


class _Recorder:
    """Collects measured records, each with its `## Measured` wiki line."""

    def __init__(self, prov: str, command: str, runs: int) -> None:
        self.prov, self.command, self.runs = prov, command, runs
        self.records: list[MeasuredRecord] = []

    def __call__(
        self, metric: str, unit: str, med: float, spread: float, method: str, shape: str = ""
    ) -> None:
        value = float(f"{med:.4g}")
        line = (
            f"- {metric}: {value:g} {unit} | measured: {self.prov}, method={method}, "
            f'command="{self.command}", runs={self.runs}, median={value:g}, spread={spread:.1f}%'
        )
        self.records.append(
            MeasuredRecord(
                metric=metric,
                value=value,
                unit=unit,
                median=med,
                spread_pct=spread,
                runs=self.runs,
                best_shape=shape,
                method=method,
                line=line,
            )
        )


def _bandwidths(
    torch: Any, req: CeilingsRequest, dev: Any, gen: Any, record: _Recorder, progress: Progress, total: int
) -> None:
    """1. device-to-device copy (bytes read + written); 2. read-heavy sum reduction (bytes read once)."""
    nbytes = req.copy_mib * 1024 * 1024
    src = torch.empty(nbytes // 4, dtype=torch.float32, device=dev).uniform_(generator=gen)
    dst = torch.empty_like(src)
    copy_fn = functools.partial(dst.copy_, src)
    times = _time_ms(torch, copy_fn, req.runs, req.warmup)
    med, spread = _stats(2.0 * src.numel() * 4, times)
    record(
        "measured_copy_bandwidth_tb_s",
        "TB/s",
        med / 1e12,
        spread,
        f"torch Tensor.copy_ d2d {req.copy_mib} MiB fp32 counting read+write bytes",
    )
    del dst, copy_fn
    progress(1, total, "read bandwidth (sum reduction)")
    sum_fn = functools.partial(torch.sum, src)
    times = _time_ms(torch, sum_fn, req.runs, req.warmup)
    med, spread = _stats(float(src.numel() * 4), times)
    record(
        "measured_read_bandwidth_tb_s",
        "TB/s",
        med / 1e12,
        spread,
        f"torch.sum over {req.copy_mib} MiB fp32 counting bytes read",
    )
    del src, sum_fn
    torch.cuda.empty_cache()


def _latency(torch: Any, req: CeilingsRequest, dev: Any, record: _Recorder) -> None:
    """The smallest kernel's per-launch time: `x.add_(1)` on one fp32 element, launched back to back in the
    warm mode. It includes the device's kernel-to-kernel gap, as every kernel of a stream pays it."""
    x = torch.zeros(1, dtype=torch.float32, device=dev)
    fn = functools.partial(x.add_, 1)
    times = _time_ms(torch, fn, req.runs, req.warmup)
    per_launch_us = sorted(t * 1e3 for t in times if t > 0)
    if not per_launch_us:
        raise KernelpilotError("all timed runs of the latency floor reported 0 ms", "run it again")
    med = statistics.median(per_launch_us)
    spread = 100.0 * (_percentile(per_launch_us, 0.9) - _percentile(per_launch_us, 0.1)) / med
    record(
        LATENCY_METRIC,
        "us",
        med,
        spread,
        "torch Tensor.add_ on 1 fp32 element, per-launch time of back-to-back launches (CUDA events, warm "
        "mode): the shortest kernel plus the device's kernel-to-kernel gap",
    )
    del x, fn


def _matmuls(
    torch: Any, req: CeilingsRequest, dev: Any, gen: Any, record: _Recorder, progress: Progress, total: int
) -> list[str]:
    """3. matmul per dtype, the best median over the sizes; returns the dtypes skipped and why."""
    skipped: list[str] = []
    for i, dt in enumerate(req.dtypes):
        progress(2 + i, total, f"{dt} matmul")
        best: tuple[float, float, int] | None = None
        try:
            for n in req.matmul_sizes:
                fn = _matmul_fn(torch, dt, n, dev, gen)
                with _tf32(torch, dt == "tf32"):
                    times = _time_ms(torch, fn, req.runs, req.warmup)
                med, spread = _stats(2.0 * n**3, times)
                if best is None or med > best[0]:
                    best = (med, spread, n)
                del fn
                torch.cuda.empty_cache()
        except (RuntimeError, AttributeError, TypeError) as exc:
            skipped.append(f"{dt} matmul: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            continue
        assert best is not None
        med, spread, n = best
        how = {
            "fp32": "torch.matmul fp32 with TF32 disabled",
            "tf32": "torch.matmul fp32 with allow_tf32=True",
            "fp8": "torch._scaled_mm e4m3 x e4m3 -> bf16, unit scales",
        }.get(dt, f"torch.matmul {dt}")
        sizes = "/".join(str(s) for s in req.matmul_sizes)
        record(
            f"measured_{dt}_matmul_tflops",
            "TFLOP/s",
            med / 1e12,
            spread,
            f"{how}, random normal data, M=N=K={n} (best median of sizes {sizes}), 2*n^3 FLOPs",
            f"{n}",
        )
    return skipped


def measure_ceilings(req: CeilingsRequest, progress: Progress = no_progress) -> CeilingsResult:
    """Run the measurements and return (and optionally write) the `## Measured` wiki lines."""
    _validate(req)
    torch = _import_torch()
    if req.device >= torch.cuda.device_count():
        raise InvalidArgumentError(
            f"--device {req.device}: only {torch.cuda.device_count()} CUDA device(s)",
            "pick an existing index",
        )
    torch.cuda.set_device(req.device)
    dev = torch.device("cuda", req.device)
    device_name = str(torch.cuda.get_device_name(req.device))
    gpu_id, gpu_match = _resolve_gpu(req, device_name)
    driver = _driver_version()
    date = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d")
    command = _command()
    torch_v = str(torch.__version__)
    cuda_v = str(torch.version.cuda)
    prov = f"device={device_name}, driver={driver}, date={date}, torch={torch_v}, cuda={cuda_v}"
    total = 2 + len(req.dtypes)
    record = _Recorder(prov, command, req.runs)
    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    progress(0, total, f"copy bandwidth on {device_name}")
    _bandwidths(torch, req, dev, gen, record, progress, total)
    progress(1, total, "latency floor (the smallest kernel)")
    _latency(torch, req, dev, record)
    skipped = _matmuls(torch, req, dev, gen, record, progress, total)
    progress(total, total, "done")
    records = record.records
    lines = [r.line for r in records]
    out_path = None
    if req.out:
        text = (
            f"# {device_name} measured ceilings (gpu_id: {gpu_id})\n\n"
            f"Measured by `{command}` on {date}. Lines in the wiki's `## Measured` line format "
            "(`kernelpilot.wiki.core`).\n\n"
            "## Measured\n" + "\n".join(lines) + "\n"
        )
        _write_atomic(Path(req.out), text, req.mkdir)
        out_path = req.out
    return CeilingsResult(
        device_name=device_name,
        gpu_id=gpu_id,
        gpu_match=gpu_match,
        driver=driver,
        torch_version=torch_v,
        cuda_version=cuda_v,
        date=date,
        command=command,
        records=records,
        skipped=skipped,
        lines=lines,
        out_path=out_path,
    )


@contextlib.contextmanager
def _tf32(torch: Any, enabled: bool) -> Iterator[None]:
    """Set fp32 matmul precision (TF32 or IEEE) for the block and restore it (new API when present)."""
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        old = m.fp32_precision
        m.fp32_precision = "tf32" if enabled else "ieee"
        try:
            yield
        finally:
            m.fp32_precision = old
        return
    old_flag = m.allow_tf32
    m.allow_tf32 = enabled
    try:
        yield
    finally:
        m.allow_tf32 = old_flag


def _matmul_fn(torch: Any, dt: str, n: int, dev: Any, gen: Any) -> Callable[[], Any]:
    if dt == "fp8":
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            raise AttributeError("this PyTorch has no torch._scaled_mm / float8_e4m3fn")
        a = torch.randn(n, n, device=dev, generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=dev, generator=gen).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.ones((), device=dev, dtype=torch.float32)
        c = torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        def fp8() -> Any:
            return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

        del c
        return fp8
    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[dt]
    a = torch.randn(n, n, device=dev, generator=gen, dtype=tdt)
    b = torch.randn(n, n, device=dev, generator=gen, dtype=tdt)
    c = torch.empty(n, n, device=dev, dtype=tdt)

    def mm() -> Any:
        return torch.matmul(a, b, out=c)

    return mm
