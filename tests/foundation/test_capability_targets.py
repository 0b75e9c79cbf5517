"""Every declared capability resolves to a function whose signature matches its declaration.

Checked without running anything: the target imports, takes the request model (and a progress sink exactly
when `takes_progress`), and is annotated to return the declared result model.
"""

from __future__ import annotations

import inspect
import typing

import pytest

from kernelpilot.capabilities import Capability, all_capabilities


@pytest.mark.parametrize("cap", all_capabilities(), ids=lambda c: c.tool)
def test_target_resolves_and_matches_request_and_result(cap: Capability) -> None:
    fn = cap.resolve()
    assert callable(fn), cap.target
    hints = typing.get_type_hints(fn)
    params = list(inspect.signature(fn).parameters.values())
    required = [p for p in params if p.default is inspect.Parameter.empty]
    assert params, f"{cap.target} takes no request"
    first = hints.get(params[0].name)
    assert first is cap.request, f"{cap.target}: takes {first}, declared request {cap.request.__name__}"
    if cap.takes_progress:
        assert len(params) >= 2, f"{cap.target} is declared takes_progress but has no progress parameter"
        assert len(required) <= 2
    else:
        assert len(required) == 1, f"{cap.target} needs more arguments than the request: {required}"
    assert hints.get("return") is cap.result, (
        f"{cap.target}: returns {hints.get('return')}, declared result {cap.result.__name__}"
    )


def test_declarations_are_consistent() -> None:
    caps = all_capabilities()
    assert len(caps) >= 40
    for cap in caps:
        assert set(cap.positional) <= set(cap.request.model_fields), cap.tool
        assert set(cap.short) <= set(cap.request.model_fields), cap.tool
        assert not (cap.read_only and cap.destructive), f"{cap.tool}: read-only yet destructive"
        assert cap.long_running or not cap.takes_progress, f"{cap.tool}: progress on a short tool"
