"""The gpu-wiki: cited hardware specs (bundled `gpu-wiki-index/` plus user wikis), lookup and citation audit.

Public API (what `kernelpilot.roofline` and `kernelpilot.workspace` import): `load_wiki`,
`Wiki` (`lookup`, `resolve_gpu`, `specs`), `CitedValue` (`citation()`), `audit_paths` -> `AuditResult`.
A missing spec is `UNKNOWN (gpu-wiki not found)`, never a guess. The loader and audit modules are imported
on first use, so importing the models (capability listing) stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernelpilot.wiki.errors import AmbiguousNameError, BareNumberError, UnitMismatchError, WikiConflictError
from kernelpilot.wiki.models import UNITS, UNKNOWN_TEXT, AuditProblem, AuditResult, CitedValue, WikiIssue

if TYPE_CHECKING:
    from kernelpilot.wiki.audit import audit_paths
    from kernelpilot.wiki.core import ENV_VAR, Wiki, load_wiki, parse_spec_line

__all__ = [
    "ENV_VAR",
    "UNITS",
    "UNKNOWN_TEXT",
    "AmbiguousNameError",
    "AuditProblem",
    "AuditResult",
    "BareNumberError",
    "CitedValue",
    "UnitMismatchError",
    "Wiki",
    "WikiConflictError",
    "WikiIssue",
    "audit_paths",
    "load_wiki",
    "parse_spec_line",
]

_LAZY = {
    "audit_paths": "kernelpilot.wiki.audit",
    "ENV_VAR": "kernelpilot.wiki.core",
    "Wiki": "kernelpilot.wiki.core",
    "load_wiki": "kernelpilot.wiki.core",
    "parse_spec_line": "kernelpilot.wiki.core",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kernelpilot.wiki' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
