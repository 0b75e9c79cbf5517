"""Look-alike: remembers the answer keyed on a checksum of every input value, so it recomputes whenever any
value changed: slower than computing, but honest (its answer is always the one for the values given)."""

import hashlib

_memo = {}


def axpy(x, y):
    key = (hashlib.sha256(x.tobytes()).hexdigest(), hashlib.sha256(y.tobytes()).hexdigest())
    if key not in _memo:
        _memo.clear()
        _memo[key] = 2.5 * x + y
    return _memo[key].copy()
