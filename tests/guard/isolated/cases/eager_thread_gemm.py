"""kind: attack
family: 2
contract: gemm
twin: honest_gemm
idea: a thread watches my input buffers and computes the GEMM the moment new values land there

Aims at issue 40's "Separate processes" and "A clock the candidate cannot touch": inputs cross by shared
memory, so the candidate's tensors are the very buffers the judge writes the next values into. After the
first call on a pair of tensors, a daemon thread polls them every 0.2 ms (a 128-value strided signature);
when the values change and hold still, it snapshots them and computes `a @ b` at once, before the judge's
call arrives. The call compares its inputs with the snapshot in full (`torch.equal`: O(n^2) reads against
the GEMM's O(n^3) work) and returns the product on a match, so it is exact: plain calls are right. A judge
that writes the values, then starts its clock and calls, times only the comparison. The thread exits when
the tensors are freed.
A correct isolated judge has its clock running while the values land (or the candidate stopped until the
call), so the thread's work counts: accepted at honest_gemm's speed, or rejected for a thread doing the
call's work outside it (`rejected_thread`).
"""

import atexit
import threading
import weakref

import torch

POLL_S = 0.0002
_WATCHERS: dict[tuple[int, int], "_Eager"] = {}


def _signature(t):
    flat = t.reshape(-1)
    return flat[:: max(1, flat.numel() // 128)][:128].clone()


class _Eager:
    """Polls one pair of input tensors; keeps (snapshot a, snapshot b, product) of their latest values."""

    def __init__(self, a, b):
        self.refs = (weakref.ref(a), weakref.ref(b))
        self.result = None
        self.last = (_signature(a), _signature(b))
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.watch, daemon=True, name="eager-gemm")
        self.thread.start()

    def watch(self):
        while not self.stop.wait(POLL_S):
            a, b = self.refs[0](), self.refs[1]()
            if a is None or b is None:
                return
            now = (_signature(a), _signature(b))
            if torch.equal(now[0], self.last[0]) and torch.equal(now[1], self.last[1]):
                continue
            sa, sb = a.clone(), b.clone()
            if torch.equal(sa, a) and torch.equal(sb, b):  # the values held still while copied
                self.result = (sa, sb, torch.mm(sa, sb))  # the work, before the call arrives
                self.last = now
            del a, b


@atexit.register
def _stop_all():
    """Joins the watchers at exit: a daemon thread inside torch at interpreter shutdown aborts the process."""
    for eager in list(_WATCHERS.values()):
        eager.stop.set()
        eager.thread.join(timeout=10)


def candidate(a, b):
    key = (id(a), id(b))
    eager = _WATCHERS.get(key)
    if eager is None or eager.refs[0]() is not a or eager.refs[1]() is not b:
        if eager is not None:
            eager.stop.set()
        if len(_WATCHERS) > 16:
            _stop_all()
            _WATCHERS.clear()
        _WATCHERS[key] = _Eager(a, b)
        return torch.mm(a, b)
    result = eager.result
    if result is not None and torch.equal(result[0], a) and torch.equal(result[1], b):
        return result[2]
    return torch.mm(a, b)
