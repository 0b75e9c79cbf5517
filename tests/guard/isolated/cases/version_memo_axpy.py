"""kind: attack
family: 6
contract: axpy
twin: honest_axpy
idea: warm mode: memo keyed on the inputs' identity and version counters

Aims at issue 40, class 6: "an uncapturable candidate in warm mode gets several calls on one set of
values, so a memo on tensor version counters needs no synchronize." The memo holds the last inputs (strong
references, so their storage cannot be reused), their `_version`s and the output; a call on the same tensor
objects with the same versions returns the output again (no read of the values at all). Every torch write
bumps `_version`, so plain calls, even after new values are copied in, are right. Run in warm mode.
A correct isolated judge writes fresh values before every call or refuses warm timing for an uncapturable
candidate: a judge writing through shared memory does not bump `_version` here, so a hit returns the old
values and is rejected (cached or timed output); otherwise every call misses: accepted at honest_axpy's
speed.
"""

import torch

_LAST: list = []  # [x, y, x version, y version, output]


def candidate(x, y):
    if _LAST and _LAST[0] is x and _LAST[1] is y and _LAST[2] == x._version and _LAST[3] == y._version:
        return _LAST[4]
    out = torch.add(y, x, alpha=2.5)
    _LAST[:] = [x, y, x._version, y._version, out]
    return out
