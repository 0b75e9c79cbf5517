"""The gpu-wiki: cited hardware specs (bundled `gpu-wiki-index/` plus user wikis), lookup and citation audit.

Public API (contract 2): `load_wiki`, `Wiki` (`lookup`, `resolve_gpu`, `specs`), `CitedValue`
(`citation()`), `audit_paths` -> `AuditResult`.
A missing spec is `UNKNOWN (gpu-wiki not found)`, never a guess.
"""

from kernelpilot.wiki.audit import audit_paths
from kernelpilot.wiki.core import ENV_VAR, Wiki, load_wiki, parse_spec_line
from kernelpilot.wiki.models import (
    UNITS,
    UNKNOWN_TEXT,
    AmbiguousNameError,
    AuditProblem,
    AuditResult,
    BareNumberError,
    CitedValue,
    UnitMismatchError,
    WikiConflictError,
    WikiIssue,
)

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
