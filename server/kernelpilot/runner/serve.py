"""The runner's loop: `python -m kernelpilot.runner --cmd-fd R --reply-fd W --arena-fd A`.

Messages (kernelpilot.runner.wire), judge -> runner:
- `{"op": "setup", "root", "candidate", "out", "in_place"}`: enter the sandbox, import the
  candidate (`file.py:function` under `root`, the working directory), reply `{"ok", "pid", "sandbox"}`.
- `{"op": "layout", "slots": [...], "bytes": n, "lib", "device"}`: the arena's slots
  (kernelpilot.runner.wire) for the next calls.
- `{"op": "run", "slots": [i, ...]}`: call the candidate on each slot's inputs in turn and copy its result
  into the slot's outputs; reply `{"ok": true, "ns": [per-call perf_counter_ns]}` or, at the first call that
  raised or returned something that is not the contract's output, `{"ok": false, "index", "kind", "error"}`.
- `{"op": "exit"}`.

The judge stops this process (SIGSTOP, with every process it started) whenever it is not running a batch,
and reads the outputs only while it is stopped; the in-process times it reports are advisory (the judge's
own clock bounds every figure the verdict uses).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import mmap
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from kernelpilot.runner import sandbox, wire

TRACE_CHARS = 1500


class Views:
    """The arena's slots as arrays of the contract's library (torch tensors or numpy arrays)."""

    def __init__(self, arena_fd: int, arena: mmap.mmap) -> None:
        self.arena_fd, self.arena, self.lib, self.device = arena_fd, arena, "numpy", "cpu"
        self.slots: list[tuple[list[Any], list[Any]]] = []
        self.torch: Any = None

    def array(self, spec: dict[str, Any]) -> Any:
        return wire.view(self.arena, self.lib, spec)

    def layout(self, msg: dict[str, Any]) -> None:
        self.lib, self.device = str(msg["lib"]), str(msg["device"])
        if self.lib == "torch" and self.torch is None:
            import torch

            self.torch = torch
        if int(msg["bytes"]) > len(self.arena):  # the judge grew the arena for a larger shape: map it again
            self.arena = mmap.mmap(self.arena_fd, int(msg["bytes"]))
        self.slots = [
            (
                [self.array(a) if "offset" in a else a["value"] for a in s["inputs"]],
                [self.array(a) for a in s["outputs"]],
            )
            for s in msg["slots"]
        ]


def _type_problem(views: Views, got: Any) -> str:
    if views.lib == "torch":
        if type(got) is not views.torch.Tensor:
            return f"returned a {type(got).__module__}.{type(got).__qualname__}, not a plain torch.Tensor"
        if got.layout != views.torch.strided or got.is_meta:
            return "returned a tensor without real storage (meta or non-strided)"
        return ""
    import numpy as np

    if type(got) is not np.ndarray:
        return f"returned a {type(got).__module__}.{type(got).__qualname__}, not a plain numpy.ndarray"
    return ""


def _is_int(views: Views, x: Any) -> bool:
    if views.lib == "torch":
        return not x.is_floating_point() and not x.is_complex() and x.dtype != views.torch.bool
    import numpy as np

    return bool(np.issubdtype(x.dtype, np.integer))


def _dtype_name(x: Any) -> str:
    return str(x.dtype).rsplit(".", 1)[-1]


def _shape_problem(views: Views, got: Any, dst: Any) -> tuple[str, str]:
    """(kind, why) when `got` cannot be the output `dst` stands for."""
    if tuple(got.shape) != tuple(dst.shape):
        return "shape", f"output shape {tuple(got.shape)} is not the reference's {tuple(dst.shape)}"
    same = _dtype_name(got) == _dtype_name(dst)
    if not same and not (_is_int(views, got) and _is_int(views, dst)):
        return "dtype", f"{_dtype_name(got)}|{_dtype_name(dst)}"
    if views.lib == "torch" and got.device.type != views.torch.device(views.device).type:
        return "lazy", f"output is on {got.device}, not the declared device {views.device}"
    return "", ""


def deliver(views: Views, result: Any, outputs: list[Any]) -> tuple[str, str]:
    """Copy the candidate's result into the slot's outputs; (kind, why) when it is not the output."""
    parts = list(result) if isinstance(result, (tuple, list)) else [result]
    if len(parts) != len(outputs):
        return "count", f"returned {len(parts)} array(s); the reference returns {len(outputs)}"
    for got, dst in zip(parts, outputs, strict=True):
        problem = _type_problem(views, got)
        if problem:
            return "lazy", problem
        kind, why = _shape_problem(views, got, dst)
        if kind:
            return kind, why
    for got, dst in zip(parts, outputs, strict=True):
        if views.lib == "torch":
            if got.numel() and got.data_ptr() == dst.data_ptr() and got.stride() == dst.stride():
                continue
            dst.copy_(got)
        else:
            import numpy as np

            if not np.shares_memory(got, dst):
                np.copyto(dst, got, casting="unsafe")
    return "", ""


class Runner:
    def __init__(self, views: Views, fn: Any, out: bool, in_place: list[int]) -> None:
        self.views, self.fn, self.out, self.in_place = views, fn, out, in_place

    def call(self, slot: int) -> tuple[str, str]:
        inputs, outputs = self.views.slots[slot]
        kwargs = {"out": outputs[0]} if self.out else {}
        result = self.fn(*inputs, **kwargs)
        if result is None and self.out:
            result = outputs[0]
        elif result is None and self.in_place:
            result = inputs[self.in_place[0]]
        kind, why = deliver(self.views, result, outputs)
        if self.views.device != "cpu":
            self.views.torch.cuda.synchronize()
        return kind, why

    def run(self, slots: list[int]) -> dict[str, Any]:
        ns: list[int] = []
        for i, slot in enumerate(slots):
            t0 = time.perf_counter_ns()
            try:
                kind, why = self.call(slot)
            except Exception as exc:  # the candidate raised: the judge names the status
                tb = traceback.format_exc()[-TRACE_CHARS:]
                return {"ok": False, "index": i, "kind": "raised", "error": f"{type(exc).__name__}: {exc}",
                        "trace": tb}  # fmt: skip
            ns.append(time.perf_counter_ns() - t0)
            if kind:
                return {"ok": False, "index": i, "kind": kind, "error": why}
        return {"ok": True, "ns": ns}


def _setup(msg: dict[str, Any], arena_fd: int, arena: mmap.mmap) -> tuple[Runner, dict[str, Any]]:
    root = Path(msg["root"])
    note = sandbox.enter(root)
    os.chdir(root)
    from kernelpilot.timing.callables import load_factory

    views = Views(arena_fd, arena)
    fn = load_factory(msg["candidate"], root)
    return Runner(views, fn, bool(msg["out"]), list(msg["in_place"])), {"ok": True, "pid": os.getpid(),
                                                                          "sandbox": note}  # fmt: skip


def serve(cmd: int, reply: int, arena_fd: int, arena: mmap.mmap) -> int:
    runner: Runner | None = None
    while True:
        try:
            msg = wire.recv(cmd)
        except wire.WireError:
            return 0  # the judge went away
        op = msg.get("op")
        if op == "exit":
            return 0
        if op == "setup":
            try:
                runner, answer = _setup(msg, arena_fd, arena)
            except Exception as exc:  # the candidate's module failed to import: the judge reports it
                answer = {"ok": False, "kind": "import", "error": f"{type(exc).__name__}: {exc}",
                          "trace": traceback.format_exc()[-TRACE_CHARS:]}  # fmt: skip
            wire.send(reply, answer)
        elif op == "layout" and runner is not None:
            runner.views.layout(msg)
            wire.send(reply, {"ok": True})
        elif op == "run" and runner is not None:
            wire.send(reply, runner.run([int(s) for s in msg["slots"]]))
        else:
            wire.send(reply, {"ok": False, "kind": "protocol", "error": f"unexpected message {op!r}"})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m kernelpilot.runner")
    p.add_argument("--cmd-fd", type=int, required=True)
    p.add_argument("--reply-fd", type=int, required=True)
    p.add_argument("--arena-fd", type=int, required=True)
    p.add_argument("--arena-bytes", type=int, required=True)
    p.add_argument("--preload", action="append", default=[], help="a library to import while the judge loads")
    a = p.parse_args(argv)
    for name in a.preload:  # the contract's array library (torch): its import overlaps the judge's own
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    arena = mmap.mmap(a.arena_fd, a.arena_bytes)
    sys.stdin.close()
    return serve(a.cmd_fd, a.reply_fd, a.arena_fd, arena)
