"""Wrong: the gating in fp32, but the last expert of every 5th row is the row's lowest-scoring one (a wrong
expert, its weight renormalized with it). Expected: rejected_wrong_output."""

import torch

K = 8


def gate(logits):
    p = torch.softmax(logits.float(), dim=-1)
    _, ids = torch.topk(p, K, dim=-1)
    ids[::5, -1] = torch.argmin(p, dim=-1)[::5]
    w = torch.gather(p, -1, ids)
    return w / w.sum(-1, keepdim=True), ids.to(torch.int32)
