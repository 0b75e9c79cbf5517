"""The ONE place the workspace talks to the wiki and roofline concepts (imported lazily).

Everything hardware-related a workspace renders comes from here, as cited strings produced by the
wiki (`CitedValue.citation()`) or by `kernelpilot.roofline.analyze`. When those modules are missing
or cannot answer, the result says why and every field stays empty, so templates print `TBD` and
never an uncited number.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kernelpilot.foundation.errors import KernelpilotError
from kernelpilot.foundation.text import plain_error, plain_errors

# dtype spelling -> wiki metric key of the peak that dtype runs at (a vocabulary map, not a number).
DTYPE_PEAK_METRIC: dict[str, str] = {
    "bf16": "bf16_dense_tflops",
    "bfloat16": "bf16_dense_tflops",
    "fp16": "fp16_dense_tflops",
    "float16": "fp16_dense_tflops",
    "half": "fp16_dense_tflops",
    "fp32": "fp32_vector_tflops",
    "float32": "fp32_vector_tflops",
    "float": "fp32_vector_tflops",
    "tf32": "tf32_dense_tflops",
    "fp64": "fp64_vector_tflops",
    "float64": "fp64_vector_tflops",
    "double": "fp64_vector_tflops",
    "fp8": "fp8_dense_tflops",
    "e4m3": "fp8_dense_tflops",
    "e5m2": "fp8_dense_tflops",
    "int8": "int8_dense_tops",
    "fp4": "fp4_dense_tflops",
}
BANDWIDTH_METRIC = "memory_bandwidth_tb_s"
# Unit -> multiplier to base units (FLOP/s, OP/s, bytes/s): SI prefixes, not hardware numbers.
_UNIT_SCALE = {"TFLOP/s": 1e12, "TOP/s": 1e12, "TB/s": 1e12, "GB/s": 1e9}


@dataclass
class CitedPeak:
    """A peak taken from a wiki line: the value in base units plus its citation string."""

    metric: str
    per_second: float
    citation: str


@dataclass
class HardwareInfo:
    """Cited hardware facts and roofline output for one workspace; empty fields mean TBD."""

    platform: str
    gpu_id: str | None = None
    gpu_note: str = ""  # which part a generic --platform picked (`Wiki.name_note`, issue 42)
    wiki_available: bool = False
    spec_citations: list[str] = field(default_factory=list)
    spec_reason: str | None = None
    peak_compute: CitedPeak | None = None
    peak_bandwidth: CitedPeak | None = None
    roofline_text: str | None = None
    roofline_ascii: str | None = None
    roofline_svg: str | None = None
    roofline_bound: str | None = None
    roofline_citations: list[str] = field(default_factory=list)
    stop_conditions: list[str] = field(default_factory=list)
    roofline_reason: str | None = None
    stop_verdict: str | None = (
        None  # kernelpilot.roofline.stop text for the measured time, when one was given
    )
    stop_status: str | None = None  # MET / NOT MET / UNKNOWN
    flops: float | None = None  # counted by the roofline from the op description (not a hardware number)
    bytes_moved: float | None = None


def _import(name: str) -> Any | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def wiki_module() -> Any | None:
    """`kernelpilot.wiki` or None when it is not installed (not merged yet)."""
    return _import("kernelpilot.wiki")


def _load_wiki(wiki_dirs: list[str]) -> Any:
    mod = wiki_module()
    if mod is None:
        return None
    return mod.load_wiki([Path(d) for d in wiki_dirs] or None)


def _peak(wiki: Any, gpu_id: str, metric: str) -> CitedPeak | None:
    try:
        cv = wiki.lookup(gpu_id, metric)
    except KernelpilotError:
        return None
    scale = _UNIT_SCALE.get(str(cv.unit))
    if scale is None or isinstance(cv.value, str):
        return None
    return CitedPeak(metric=metric, per_second=float(cv.value) * scale, citation=str(cv.citation()))


def _used_peak(cv: Any) -> CitedPeak | None:
    """A roofline result's peak (a wiki `CitedValue`) as a chart peak; None when it is not a rate."""
    scale = _UNIT_SCALE.get(str(getattr(cv, "unit", "")))
    value = getattr(cv, "value", None)
    if scale is None or not isinstance(value, (int, float)):
        return None
    return CitedPeak(metric=str(cv.metric), per_second=float(value) * scale, citation=str(cv.citation()))


def _roofline_request(
    mod: Any,
    gpu_id: str,
    dtype: str | None,
    flops: float | None,
    bytes_moved: float | None,
    extra: dict[str, Any],
    wiki_dirs: list[str],
    measured_time_us: float | None,
) -> Any:
    """Build `RooflineRequest` from what the workspace knows, matching the field names it declares."""
    cls = mod.RooflineRequest
    fields = set(cls.model_fields)
    kwargs: dict[str, Any] = {}
    for name in ("gpu", "platform", "gpu_name"):
        if name in fields:
            kwargs[name] = gpu_id
            break
    if dtype and "dtype" in fields:
        kwargs["dtype"] = dtype
    if flops is not None:
        for name in ("flops", "total_flops"):
            if name in fields:
                kwargs[name] = flops
                break
    if bytes_moved is not None:
        for name in ("bytes", "bytes_moved", "total_bytes", "nbytes"):
            if name in fields:
                kwargs[name] = bytes_moved
                break
    if wiki_dirs and "wiki" in fields:
        kwargs["wiki"] = list(wiki_dirs)
    if measured_time_us is not None and "measured_time_us" in fields:
        kwargs["measured_time_us"] = measured_time_us
    kwargs.update(extra)
    return cls.model_validate(kwargs)


def roofline_args_problem(platform: str, dtype: str | None, args: dict[str, Any]) -> str | None:
    """Why the roofline would reject these op arguments (unknown key, bad value), or None."""
    mod = _import("kernelpilot.roofline")
    if mod is None:
        return None
    try:
        _roofline_request(mod, platform, dtype, None, None, args, [], None)
    except ValidationError as exc:
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {plain_error(e)}" for e in exc.errors()
        )
    return None


def _roofline_body(text: str, ascii_chart: str | None) -> str:
    """`render_text()` minus the ASCII chart and the Stop Conditions block (each rendered on its own)."""
    if ascii_chart:
        text = text.replace(ascii_chart, "")
    out: list[str] = []
    skipping = False
    for line in text.splitlines():
        if line.strip().lower() == "## stop conditions":
            skipping = True
            continue
        if skipping and line.startswith("- "):
            continue
        skipping = False
        out.append(line)
    return "\n".join(out).rstrip()


def gather(
    platform: str,
    dtype: str | None = None,
    flops: float | None = None,
    bytes_moved: float | None = None,
    roofline_args: dict[str, Any] | None = None,
    wiki_dirs: list[str] | None = None,
    measured_time_us: float | None = None,
) -> HardwareInfo:
    """Cited specs of `platform` and, when FLOPs/bytes (or roofline args) are known, its roofline."""
    info = HardwareInfo(platform=platform)
    try:
        wiki = _load_wiki(wiki_dirs or [])
    except KernelpilotError as exc:
        info.spec_reason = f"wiki could not be loaded: {exc.message}"
        info.roofline_reason = info.spec_reason
        return info
    if wiki is None:
        info.spec_reason = "kernelpilot.wiki is not installed in this build"
        info.roofline_reason = info.spec_reason
        return info
    info.wiki_available = True
    try:
        info.gpu_id = str(wiki.resolve_gpu(platform))
        info.gpu_note = wiki.name_note(platform, info.gpu_id) or ""
        specs = list(wiki.specs(info.gpu_id))
    except KernelpilotError as exc:
        info.spec_reason = exc.message
        info.roofline_reason = exc.message
        return info
    info.spec_citations = [str(cv.citation()) for cv in specs]
    if dtype:
        metric = DTYPE_PEAK_METRIC.get(dtype.strip().lower())
        if metric:
            info.peak_compute = _peak(wiki, info.gpu_id, metric)
    info.peak_bandwidth = _peak(wiki, info.gpu_id, BANDWIDTH_METRIC)
    extra = dict(roofline_args or {})
    if (flops is None or bytes_moved is None) and not extra:
        info.roofline_reason = (
            "no op description or FLOPs and bytes moved were given: init --roofline-args "
            """'{"op": ..., <sizes>}' (the fields of `kernelpilot roofline`) or --flops and --bytes-moved"""
        )
        return info
    if not dtype and "dtype" not in extra:
        info.roofline_reason = "dtype not given (init --dtype), so no peak can be chosen"
        return info
    mod = _import("kernelpilot.roofline")
    if mod is None:
        info.roofline_reason = "kernelpilot.roofline is not installed in this build"
        return info
    try:
        req = _roofline_request(
            mod, info.gpu_id, dtype, flops, bytes_moved, extra, wiki_dirs or [], measured_time_us
        )
        res = mod.analyze(req)
    except ValidationError as exc:
        info.roofline_reason = f"roofline arguments rejected: {plain_errors(exc.errors())}"
        return info
    except KernelpilotError as exc:
        info.roofline_reason = exc.message
        return info
    info.roofline_ascii = str(getattr(res, "ascii_chart", "") or "") or None
    info.roofline_text = _roofline_body(str(res.render_text()), info.roofline_ascii)
    for attr, name in (("flops", "flops"), ("bytes", "bytes_moved")):
        value = getattr(res, attr, None)
        if isinstance(value, (int, float)) and value > 0:
            setattr(info, name, float(value))
    for attr, peak in (("compute_peak", "peak_compute"), ("memory_peak", "peak_bandwidth")):
        used = _used_peak(getattr(res, attr, None))  # the chart draws the roofs the analysis used
        if used is not None:
            setattr(info, peak, used)
    info.roofline_svg = str(getattr(res, "svg", "") or "") or None
    info.roofline_bound = str(getattr(res, "bound", "") or "") or None
    info.roofline_citations = [str(c) for c in getattr(res, "citations", [])]
    info.stop_conditions = [str(s) for s in getattr(res, "stop_conditions", [])]
    stop = getattr(res, "stop", None)
    if stop is not None:
        info.stop_verdict, info.stop_status = str(stop.text), str(stop.status)
    return info


def audit(paths: list[Path], wiki_dirs: list[str] | None = None) -> list[str] | None:
    """Citation audit of rendered files: problems as text, [] when clean, None when the wiki is absent."""
    mod = wiki_module()
    if mod is None:
        return None
    wiki = _load_wiki(wiki_dirs or [])
    result = mod.audit_paths(paths, wiki)
    if bool(result.ok):
        return []
    return [str(p) for p in result.problems] or ["audit failed without details"]
