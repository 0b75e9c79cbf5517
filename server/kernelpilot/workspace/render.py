"""Jinja2 rendering of workspace files from the bundled `templates/` folder, and the citation guard.

Templates see plain data; every hardware number they can print comes from `HardwareInfo` (cited
strings). `assert_no_uncited_specs` refuses a rendered file holding a citation the wiki or roofline
did not produce, so a template cannot forge one.
"""

from __future__ import annotations

import html
import re
from functools import cache
from pathlib import Path
from typing import Any

from kernelpilot.foundation.errors import CitationError
from kernelpilot.foundation.paths import bundled_dir
from kernelpilot.workspace.hardware import HardwareInfo

TBD = "TBD"
CITATION_RE = re.compile(r"[A-Za-z0-9_]+: \S+(?: \S+)? <- \S+?:L\d+")


def tbd(value: Any) -> str:
    """Jinja filter: the value as text, or `TBD` when unknown/empty."""
    if value is None or value == "" or value == [] or value == {}:
        return TBD
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def num(value: Any, digits: int = 4) -> str:
    """Jinja filter: a measured number with `digits` significant digits, or `-`."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{value:.{digits}g}"
    return str(value)


def pct(value: Any) -> str:
    """Jinja filter: a percentage with 3 significant digits, or `-`."""
    return "-" if value is None else f"{float(value):.3g}%"


def speedup(value: Any) -> str:
    return "-" if value is None else f"{float(value):.2f}x"


@cache
def _env(autoescape: bool) -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(bundled_dir("templates"))),
        undefined=jinja2.StrictUndefined,
        autoescape=autoescape,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["tbd"] = tbd
    env.filters["num"] = num
    env.filters["speedup"] = speedup
    env.filters["pct"] = pct
    return env


def render_template(name: str, **context: Any) -> str:
    """Render `templates/<name>`; HTML templates are autoescaped."""
    env = _env(name.endswith(".html.j2"))
    text: str = env.get_template(name).render(**context)
    return text


def render_readme(config: dict[str, Any], hw: HardwareInfo) -> tuple[str, list[str]]:
    """The workspace README and the list of fields left TBD."""
    tbd_fields = [
        key for key in ("dtype", "shape", "goal", "flops", "bytes_moved") if config.get(key) in (None, "", [])
    ]
    if not hw.spec_citations:
        tbd_fields.append("hardware_spec")
    if not hw.roofline_text:
        tbd_fields.append("roofline")
    if not hw.stop_conditions:
        tbd_fields.append("stop_conditions")
    text = render_template("workspace_readme.md.j2", ws=config, hw=hw)
    return text, tbd_fields


def readable_text(path: Path) -> str:
    """File text as a reader sees it: HTML entities decoded (so `&lt;-` citations are checked too)."""
    text = path.read_text(encoding="utf-8")
    return html.unescape(text) if path.suffix.lower() in (".html", ".htm", ".svg") else text


def citation_lines(path: Path) -> list[str]:
    """Every citation found in a rendered file, one per entry."""
    return [m.group(0) for line in readable_text(path).splitlines() for m in CITATION_RE.finditer(line)]


def assert_no_uncited_specs(paths: list[Path], hw: HardwareInfo) -> None:
    """Every citation in the rendered files must be one the wiki/roofline produced for this workspace."""
    known = set(hw.spec_citations) | set(hw.roofline_citations)
    for peak in (hw.peak_compute, hw.peak_bandwidth):
        if peak is not None:
            known.add(peak.citation)
    produced = "\n".join([hw.roofline_text or "", hw.roofline_ascii or "", *hw.stop_conditions])
    for path in paths:
        text = readable_text(path)
        for lineno, line in enumerate(text.splitlines(), start=1):
            for match in CITATION_RE.finditer(line):
                cite = match.group(0)
                if cite in known or cite in produced:
                    continue
                if any(cite in k or k in cite for k in known):
                    continue
                raise CitationError(
                    f"{path.name}:L{lineno} holds a citation the wiki did not produce: {cite!r}",
                    "templates must print only citations from kernelpilot.wiki / roofline",
                )
