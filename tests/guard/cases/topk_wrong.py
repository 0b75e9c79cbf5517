"""Wrong: the last chosen expert of every 5th row is the row's lowest-scoring one (a wrong expert)."""

import numpy as np


def gate(logits, k):
    z = np.exp(logits - logits.max(-1, keepdims=True))
    p = z / z.sum(-1, keepdims=True)
    ids = np.argsort(-p, axis=-1, kind="stable")[:, : int(k[0])]
    ids[::5, -1] = np.argmin(p, axis=-1)[::5]
    w = np.take_along_axis(p, ids, axis=-1)
    return (w / w.sum(-1, keepdims=True)).astype(np.float32), ids.astype(np.int32)
