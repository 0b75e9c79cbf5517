"""Workspace test helpers: the real wiki, roofline and citation audit over the bundled gpu-wiki-index.

Workspaces in these tests cite the bundled H100 SXM5 file (`gpu-wiki-index/nvidia/h100-sxm5.md`) through
`kernelpilot.wiki` and `kernelpilot.roofline`, and every write is checked by the real
`kernelpilot.wiki.audit_paths`. Expected citations are read from the wiki (`cite`), never typed in, so
the tests follow the wiki's edits while still failing on a number the wiki does not hold.
"""

from __future__ import annotations

import functools

from kernelpilot.wiki import Wiki, load_wiki

GPU = "h100-sxm5"  # the wiki's id: a generic name ("H100") may one day ask which part is meant


@functools.cache
def bundled_wiki() -> Wiki:
    return load_wiki()


def cite(metric: str, gpu: str = GPU) -> str:
    """The citation the wiki gives for `metric` of `gpu`: 'metric: value unit <- path:Lline'."""
    return str(bundled_wiki().lookup(gpu, metric).citation())


def value_text(metric: str, gpu: str = GPU) -> str:
    """'value unit' of that citation (what a forged report would change)."""
    return cite(metric, gpu).split(": ", 1)[1].split(" <- ", 1)[0]
