"""The GPT of bench/train_gpt.py written in PyTorch, as a PyTorch user writes it.

The same model as nxcc's built-in `gpt` decoder (`neuronx-cc train` with
`model_source: megatron`): learned token and position embeddings (the token table tied to
the output head), pre-LayerNorm blocks of causal multi-head attention and a GELU (tanh
form) MLP, biases on every projection, a final LayerNorm; the loss is the mean token
cross-entropy; AdamW with decoupled weight decay and the gradient clipped by global norm,
in float32. `train_steps` times its optimizer steps on random tokens; the benchmark only
compares speed, so the initialisation and data need not match nxcc's run.
"""

from __future__ import annotations

import time

import torch
from torch import nn
from torch.nn import functional as F


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.attn_norm = nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.mlp_norm = nn.LayerNorm(hidden)
        self.up = nn.Linear(hidden, ffn)
        self.down = nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        q, k, v = self.qkv(self.attn_norm(x)).split(h, dim=-1)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        ctx = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(ctx.transpose(1, 2).reshape(b, s, h))
        return x + self.down(F.gelu(self.up(self.mlp_norm(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers: int, hidden: int, heads: int, ffn: int, vocab: int,
                 seq: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, hidden)
        self.positions = nn.Embedding(seq, hidden)
        self.blocks = nn.ModuleList(Block(hidden, heads, ffn) for _ in range(layers))
        self.final_norm = nn.LayerNorm(hidden)

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = self.tokens(ids) + self.positions.weight[: ids.shape[1]]
        for block in self.blocks:
            x = block(x)
        logits = self.final_norm(x) @ self.tokens.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.reshape(-1))


def train_steps(layers: int, hidden: int, heads: int, seq: int, micro_batch: int, vocab: int,
                steps: int, warmup: int, threads: int) -> list[float]:
    """Seconds of each of `steps` timed optimizer steps (after `warmup` untimed ones) on
    `threads` threads."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = GPT(layers, hidden, heads, 4 * hidden, vocab, seq)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.01)
    gen = torch.Generator().manual_seed(0)
    times = []
    for k in range(warmup + steps):
        ids = torch.randint(0, vocab, (micro_batch, seq + 1), generator=gen)
        start = time.perf_counter()
        loss = model(ids[:, :-1], ids[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if k >= warmup:
            times.append(time.perf_counter() - start)
    return times
