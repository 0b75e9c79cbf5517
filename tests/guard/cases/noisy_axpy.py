"""Hack: the result depends on hidden state (a call counter), within the tolerance: not deterministic."""

import numpy as np

_calls = [0]


def axpy(x, y):
    _calls[0] += 1
    out = 2.5 * x + y
    out[0] = np.nextafter(out[0], np.float32(np.inf) if _calls[0] % 2 else np.float32(-np.inf))
    return out
