"""Look-alike: the gating in fp32, ties broken from the highest expert id (the experts reversed before
torch.topk), unlike PyTorch's own order: other ids on tied rows, equally valid. Expected: accepted."""

import torch

K = 8


def gate(logits):
    p = torch.softmax(logits.float(), dim=-1)
    e = p.shape[-1]
    w, rev = torch.topk(p.flip(-1), K, dim=-1)
    ids = (e - 1 - rev).to(torch.int32)
    return w / w.sum(-1, keepdim=True), ids


def gate_torch(logits):
    """The PyTorch op itself (the task's baseline candidate)."""
    p = torch.softmax(logits.float(), dim=-1)
    w, ids = torch.topk(p, K, dim=-1)
    return w / w.sum(-1, keepdim=True), ids.to(torch.int32)
