"""Workspace test helpers: stand-ins for the wiki/roofline public API over a small synthetic wiki.

The stubs keep the call signatures of `kernelpilot.wiki` / `kernelpilot.roofline` (see their `__init__`
docstrings) so workspace tests pin the cited-spec path on known numbers; tests marked `needs_real_wiki`
(`test_workspace_hardware.py`) run against the real packages and the bundled gpu-wiki-index.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from kernelpilot.foundation.errors import UnknownSpecError

STUB_ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "workspace" / "stub-wiki"
STUB_FILE = "gpu-wiki-index/nvidia/stub-gpu.md"
_LINE = re.compile(
    r"^- (?P<metric>[a-z0-9_]+): (?P<value>\"[^\"]*\"|\S+) (?P<unit>\S+) \| source: (?P<src>.+)$"
)
_CITE = re.compile(
    r"(?P<metric>[a-z0-9_]+): (?P<value>\"[^\"]*\"|\S+) (?P<unit>\S+) <- (?P<path>\S+?):L(?P<line>\d+)"
)


class CitedValue(BaseModel):
    metric: str
    value: float | str
    unit: str
    path: str
    line: int
    source_text: str
    measured: bool = False
    value_text: str = ""

    def citation(self) -> str:
        return f"{self.metric}: {self.value_text} {self.unit} <- {self.path}:L{self.line}"


class StubWiki:
    def __init__(self) -> None:
        self.values: dict[str, CitedValue] = {}
        text = (STUB_ROOT / STUB_FILE).read_text().splitlines()
        for n, line in enumerate(text, start=1):
            m = _LINE.match(line)
            if m:
                raw = m["value"]
                value: float | str = raw.strip('"') if raw.startswith('"') else float(raw)
                self.values[m["metric"]] = CitedValue(
                    metric=m["metric"],
                    value=value,
                    unit=m["unit"],
                    path=STUB_FILE,
                    line=n,
                    source_text=m["src"],
                    value_text=raw,
                )

    def resolve_gpu(self, name: str) -> str:
        if name.lower().replace(" ", "-") in ("stub-gpu", "stubgpu", "stub"):
            return "stub-gpu"
        raise UnknownSpecError(f"UNKNOWN (gpu-wiki not found): GPU {name!r}", "add it to the wiki")

    def specs(self, gpu_id: str) -> list[CitedValue]:
        self.resolve_gpu(gpu_id)
        return list(self.values.values())

    def lookup(self, gpu: str, metric: str) -> CitedValue:
        self.resolve_gpu(gpu)
        if metric not in self.values:
            raise UnknownSpecError(f"UNKNOWN (gpu-wiki not found): {metric} for {gpu}", "add the line")
        return self.values[metric]


class AuditResult(BaseModel):
    ok: bool
    problems: list[str]
    checked: int


def audit_paths(paths: list[Path], wiki: Any = None) -> AuditResult:
    lines = (STUB_ROOT / STUB_FILE).read_text().splitlines()
    problems: list[str] = []
    checked = 0
    for p in paths:
        for n, line in enumerate(Path(p).read_text().splitlines(), start=1):
            for m in _CITE.finditer(line):
                checked += 1
                target = int(m["line"])
                src = lines[target - 1] if m["path"] == STUB_FILE and 0 < target <= len(lines) else ""
                if not src.startswith(f"- {m['metric']}: {m['value']} {m['unit']} |"):
                    problems.append(f"{Path(p).name}:L{n}: forged or dangling citation {m.group(0)!r}")
    return AuditResult(ok=not problems, problems=problems, checked=checked)


class RooflineRequest(BaseModel):
    gpu: str
    dtype: str | None = None
    flops: float | None = None
    bytes: float | None = None
    target_fraction: float = 0.9


class RooflineResult(BaseModel):
    bound: str
    stop_conditions: list[str]
    svg: str
    ascii_chart: str
    citations: list[str]

    def render_text(self) -> str:
        return f"bound: {self.bound}\n" + "\n".join(f"peak: {c}" for c in self.citations)


def analyze(req: RooflineRequest) -> RooflineResult:
    wiki = StubWiki()
    peak = wiki.lookup(req.gpu, "bf16_dense_tflops" if req.dtype == "bf16" else "fp32_vector_tflops")
    bw = wiki.lookup(req.gpu, "memory_bandwidth_tb_s")
    assert req.flops and req.bytes
    ridge = float(peak.value) / float(bw.value)
    bound = "compute" if req.flops / req.bytes >= ridge else "memory"
    cites = [peak.citation(), bw.citation()]
    floor_s = max(req.flops / (float(peak.value) * 1e12), req.bytes / (float(bw.value) * 1e12))
    stop = [
        f"stop when time <= {floor_s / req.target_fraction * 1e6:.3g} us "
        f"({req.target_fraction:.0%} of the {bound} roof; {cites[0] if bound == 'compute' else cites[1]})"
    ]
    return RooflineResult(
        bound=bound,
        stop_conditions=stop,
        svg="<svg xmlns='http://www.w3.org/2000/svg'/>",
        ascii_chart="|roof|",
        citations=cites,
    )


@pytest.fixture
def stub_wiki(monkeypatch: pytest.MonkeyPatch) -> StubWiki:
    """Install stand-ins for `kernelpilot.wiki` and `kernelpilot.roofline` (same signatures)."""
    wiki_mod = types.ModuleType("kernelpilot.wiki")
    wiki_mod.load_wiki = lambda extra_dirs=None: StubWiki()  # type: ignore[attr-defined]
    wiki_mod.audit_paths = audit_paths  # type: ignore[attr-defined]
    wiki_mod.CitedValue = CitedValue  # type: ignore[attr-defined]
    roof_mod = types.ModuleType("kernelpilot.roofline")
    roof_mod.RooflineRequest = RooflineRequest  # type: ignore[attr-defined]
    roof_mod.analyze = analyze  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kernelpilot.wiki", wiki_mod)
    monkeypatch.setitem(sys.modules, "kernelpilot.roofline", roof_mod)
    return StubWiki()


def real_wiki_available() -> bool:
    try:
        import kernelpilot.roofline
        import kernelpilot.wiki  # noqa: F401
    except ImportError:
        return False
    return True
