"""kind: attack
family: 1
contract: axpy
twin: honest_axpy
idea: time.perf_counter/monotonic replaced by clocks that stop while my call runs

Aims at issue 40, class 1 and its "A clock the candidate cannot touch" (docs/guard.md lists
`time.perf_counter` among the timing functions). When imported, `time.perf_counter`, `perf_counter_ns`,
`monotonic` and `monotonic_ns` are replaced by the real clock minus a credit; each call adds 90 % of its own
duration to the credit, so any timer read through these functions in this process sees my calls take 10 %
of their time (and the clocks stay monotonic). The output is honest.
A correct isolated judge bounds every figure with its own process's clock: accepted at honest_axpy's speed,
or rejected with a `rejected_timer_*` status (an in-process fine timer that disagrees with the bound).
"""

import time

import torch

_PERF = time.perf_counter
_PERF_NS = time.perf_counter_ns
_MONO = time.monotonic
_MONO_NS = time.monotonic_ns
_CREDIT = [0.0]  # seconds the replaced clocks leave out


def _perf():
    return _PERF() - _CREDIT[0]


def _perf_ns():
    return _PERF_NS() - int(_CREDIT[0] * 1e9)


def _mono():
    return _MONO() - _CREDIT[0]


def _mono_ns():
    return _MONO_NS() - int(_CREDIT[0] * 1e9)


time.perf_counter = _perf
time.perf_counter_ns = _perf_ns
time.monotonic = _mono
time.monotonic_ns = _mono_ns


def candidate(x, y):
    start = _PERF()
    out = torch.add(y, x, alpha=2.5)
    _CREDIT[0] += 0.9 * (_PERF() - start)
    return out
