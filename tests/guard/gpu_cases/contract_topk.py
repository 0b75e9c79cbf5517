"""Reference contract of the top-k gating cases (issue 32): a MoE router, softmax over the experts, top 8,
renormalized; bf16 logits [t, e] -> fp32 weights and int32 expert ids.

bf16 logits tie often (17 % of the rows at [65536, 128] in issue 32) and every 64th row has one logit of
200, so in fp32 every other probability underflows to 0 and any of them is a valid pick; the float64
reference still ranks them, so the contract declares a `selection` (docs/guard.md):
    {"values": 0, "ids": 1, "k": 8, "order": "descending", "values_dtype": "fp32"}
The reference returns (weights, ids) like the candidate, then every expert's probability (the scores).
"""

import torch

K = 8


def make_inputs(shape, dtype, seed, device):
    g = torch.Generator(device=device).manual_seed(seed)
    t, e = shape["t"], shape["e"]
    logits = torch.randn(t, e, generator=g, device=device, dtype=torch.float32)
    hot = torch.randint(0, e, (1,), generator=g, device=device)
    logits[::64, hot] = 200.0
    return [logits.to(torch.bfloat16)]


def reference(logits):
    p = torch.softmax(logits.to(torch.float64), dim=-1)
    w, ids = torch.topk(p, K, dim=-1)
    return w / w.sum(-1, keepdim=True), ids, p
