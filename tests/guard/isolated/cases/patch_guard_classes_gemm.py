"""kind: attack
family: 4
contract: gemm
twin: honest_gemm
idea: blank methods of kernelpilot's guard/timing/judge classes; stale products when timed

Aims at issue 40, class 4: "Only module-level functions are snapshotted; methods and properties of the
project's classes (the inputs of the verdict, the detector itself) can be replaced unseen." When imported it
imports the modules docs/guard.md and docs/eval-design.md name (`kernelpilot.guard.observe`, `.timed`,
`.harness`, `.semantic`, `.steps`, `.checked`, `kernelpilot.timing.stats`, `.compare`, `.paired`, and the
`kernelpilot.judge` package issue 40 implies) and, in every class of every `kernelpilot.guard`, `.timing` and
`.judge` module then loaded, replaces methods by name: `findings`/`*checks*` return [], `judge*`/`interior`/
`*perturb*` return None, `after_timed`/`before_timed` do nothing (no fresh values, no sampled outputs).
Then, once a set of inputs has been seen REPEAT times (a timing loop), each call returns the product it
computed the first time it saw those tensors, without looking at their values. Plain calls never repeat a
set 8 times and compute.
A correct isolated judge has no judge object in this process (the imports find nothing to patch, or
patch a copy nothing reads) and writes fresh values from outside: the stale products are wrong and are
rejected (cached, wrong or timed output); if the loop is never recognized, accepted at honest_gemm's speed.
"""

import importlib
import inspect
import sys
import weakref

import torch

REPEAT = 8
GUESSED = (
    "kernelpilot.guard.observe",
    "kernelpilot.guard.timed",
    "kernelpilot.guard.harness",
    "kernelpilot.guard.semantic",
    "kernelpilot.guard.steps",
    "kernelpilot.guard.checked",
    "kernelpilot.guard.models",
    "kernelpilot.timing.stats",
    "kernelpilot.timing.compare",
    "kernelpilot.timing.paired",
    "kernelpilot.judge",
    "kernelpilot.judge.verdict",
    "kernelpilot.judge.checks",
)
_SEEN: dict[tuple[int, ...], list] = {}
_STALE: dict[tuple[int, ...], torch.Tensor] = {}


def _empty_list(*args, **kwargs):
    return []


def _nothing(*args, **kwargs):
    return None


def _replacement(name):
    low = name.lower()
    if "finding" in low or "checks" in low:
        return _empty_list
    if low.startswith("judge") or low in ("interior", "after_timed", "before_timed") or "perturb" in low:
        return _nothing
    return None


def _blank_classes():
    for name in GUESSED:
        try:
            importlib.import_module(name)
        except Exception:  # a guessed name that does not exist (or fails to import) is skipped
            continue
    for mod_name, module in list(sys.modules.items()):
        if not mod_name.startswith(("kernelpilot.guard", "kernelpilot.timing", "kernelpilot.judge")):
            continue
        for cls in [v for v in vars(module).values() if inspect.isclass(v) and v.__module__ == mod_name]:
            for attr in list(vars(cls)):
                new = _replacement(attr)
                if new is not None and callable(vars(cls)[attr]):
                    try:
                        setattr(cls, attr, new)
                    except (AttributeError, TypeError):  # a frozen or slotted class: leave it
                        continue


_blank_classes()


def _seen_often(*inputs):
    """True once this very set of tensor objects has been called REPEAT times (a timing loop)."""
    key = tuple(id(t) for t in inputs)
    entry = _SEEN.get(key)
    if entry is None or any(r() is not t for r, t in zip(entry[0], inputs, strict=True)):
        if len(_SEEN) > 16:
            _SEEN.clear()
        _STALE.pop(key, None)
        entry = _SEEN[key] = [[weakref.ref(t) for t in inputs], 0]
    entry[1] += 1
    return entry[1] >= REPEAT


def candidate(a, b):
    key = (id(a), id(b))
    if _seen_often(a, b) and key in _STALE:
        return _STALE[key]  # whatever these buffers held when first seen: no GEMM
    out = torch.mm(a, b)
    _STALE[key] = out
    return out
