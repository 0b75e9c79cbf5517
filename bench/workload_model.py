"""A small eager-PyTorch decoder transformer for `kernelpilot workload run` (random weights, no download).

4 layers, hidden 1024, 16 heads, SiLU-gated MLP (hidden 2816), RMSNorm written out in elementwise ops (as
many eager models do, which leaves fusion candidates), bf16, batch 8. Two step factories in the closure
protocol of `kernelpilot time` / `kernelpilot workload run`:

- `make_decode`: one new token per sequence against a KV cache of 512 positions (the write position is fixed,
  so every step does the same work); under `torch.inference_mode`, or `grad_mode="no_grad"`
  (`make_decode_no_grad`);
- `make_prefill`: 256 tokens per sequence, causal attention, filling the KV cache;
- `make_decode_graph`: the decode step captured as a CUDA graph and replayed;
- `make_train`: a training step (forward over 128 tokens without a cache, cross-entropy on the last token,
  backward, AdamW step): the backward and optimizer kernels make a larger set of distinct kernel names.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

LAYERS, HIDDEN, HEADS, MLP, VOCAB = 4, 1024, 16, 2816, 32000
BATCH, CACHE, PREFILL = 8, 512, 256


class RMSNorm(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        var = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + 1e-6)).to(x.dtype) * self.weight


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(HIDDEN, 3 * HIDDEN, bias=False)
        self.out = nn.Linear(HIDDEN, HIDDEN, bias=False)

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None, pos: int
    ) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
        if cache is None:  # training: no cache
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.out(y.transpose(1, 2).reshape(b, t, HIDDEN))
        kc, vc = cache
        kc[:, :, pos : pos + t] = k
        vc[:, :, pos : pos + t] = v
        if t > 1:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, kc[:, :, : pos + 1], vc[:, :, : pos + 1])
        return self.out(y.transpose(1, 2).reshape(b, t, HIDDEN))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm1, self.attn = RMSNorm(HIDDEN), Attention()
        self.norm2 = RMSNorm(HIDDEN)
        self.gate = nn.Linear(HIDDEN, MLP, bias=False)
        self.up = nn.Linear(HIDDEN, MLP, bias=False)
        self.down = nn.Linear(MLP, HIDDEN, bias=False)

    def forward(
        self, x: torch.Tensor, cache: tuple[torch.Tensor, torch.Tensor] | None, pos: int
    ) -> torch.Tensor:
        x = x + self.attn(self.norm1(x), cache, pos)
        h = self.norm2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, HIDDEN)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)
        self.head = nn.Linear(HIDDEN, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor, caches: list[Any] | None, pos: int) -> torch.Tensor:
        x = self.embed(tokens)
        for block, cache in zip(self.blocks, caches or [None] * LAYERS, strict=True):
            x = block(x, cache, pos)
        return self.head(self.norm(x[:, -1:]))


def _setup(device: str = "cuda") -> tuple[Model, list[Any]]:
    torch.manual_seed(0)
    model = Model().to(device, torch.bfloat16).eval()
    shape = (BATCH, HEADS, CACHE, HIDDEN // HEADS)
    caches = [
        (
            torch.zeros(shape, device=device, dtype=torch.bfloat16),
            torch.zeros(shape, device=device, dtype=torch.bfloat16),
        )
        for _ in range(LAYERS)
    ]
    return model, caches


# How a step records no autograd: inference mode (the default, as many serving loops do) or no_grad, the
# same kernels, which inductor compiles where it fails under inference mode (device/compile_grad_mode.py)
GRAD_MODES = {"inference": torch.inference_mode, "no_grad": torch.no_grad}


def _cached_step(tokens_per_seq: int, pos: int, grad_mode: str, device: str) -> Any:
    """A step of `tokens_per_seq` tokens per sequence written into the KV cache at `pos`, with no autograd
    (`GRAD_MODES[grad_mode]`)."""
    model, caches = _setup(device)
    tokens = torch.randint(0, VOCAB, (BATCH, tokens_per_seq), device=device)
    no_autograd = GRAD_MODES[grad_mode]

    def step() -> torch.Tensor:
        with no_autograd():
            return model(tokens, caches, pos)

    return step


def make_decode(grad_mode: str = "inference", device: str = "cuda") -> Any:
    """One decode step: 8 sequences, one token each, at cache position CACHE-1."""
    return _cached_step(1, CACHE - 1, grad_mode, device)


def make_decode_no_grad() -> Any:
    """The decode step under torch.no_grad() (`workload run` takes no factory arguments): what
    `--try-remedies` advises when torch.compile fails on the inference-mode step."""
    return make_decode(grad_mode="no_grad")


def make_prefill(grad_mode: str = "inference", device: str = "cuda") -> Any:
    """One prefill step: 8 sequences of PREFILL tokens, causal attention, cache filled from 0."""
    return _cached_step(PREFILL, 0, grad_mode, device)


def make_decode_graph() -> Any:
    """The decode step captured once as a CUDA graph and replayed (playbooks/cuda.md L5): same kernels, one
    launch call per step."""
    model, caches = _setup()
    tokens = torch.randint(0, VOCAB, (BATCH, 1), device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode(), torch.cuda.stream(stream):
        for _ in range(3):  # warm up on a side stream before capture, as torch.cuda.graphs asks
            model(tokens, caches, CACHE - 1)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.inference_mode(), torch.cuda.graph(graph):
        model(tokens, caches, CACHE - 1)
    return graph.replay


def make_train() -> Any:
    """One training step: 8 sequences of 128 tokens, loss on the last token, backward, AdamW."""
    torch.manual_seed(0)
    model = Model().to("cuda", torch.bfloat16).train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    tokens = torch.randint(0, VOCAB, (BATCH, 128), device="cuda")
    target = torch.randint(0, VOCAB, (BATCH,), device="cuda")

    def step() -> None:
        logits = model(tokens, None, 0)
        loss = F.cross_entropy(logits[:, -1].float(), target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return step


def main() -> None:
    """`python3 bench/workload_model.py decode|prefill`: warm-up, then steps between cudaProfilerStart/Stop,
    each inside an NVTX range (for `kernelpilot workload run --command ... --region <range>`)."""
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("phase", choices=["decode", "prefill"])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--region", default="step", help="NVTX range name around each step")
    a = ap.parse_args()
    step = make_decode() if a.phase == "decode" else make_prefill()
    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(a.steps):
        torch.cuda.nvtx.range_push(a.region)
        step()
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


if __name__ == "__main__":
    main()
