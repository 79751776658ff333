"""The decoder's attention core on one rank: the causal mask, rotary positions, and the
grouped-query softmax attention of the rank's heads.

q, k, v arrive as [batch, seq, heads * head_dim] column slices of the fused projection
(this rank's heads); `heads_first` reshapes them to [batch, heads, seq, head_dim] (rotated
for rotary positions) and `core` computes the context [batch, seq, heads * head_dim]. The
tables (mask, cos and sin) depend on nothing but the shapes: they are built once, before
the layers (`prepare`), so no layer's recomputation owns them and a pipeline stage that
reads them rebuilds them. The scores-to-context products are one `selective` recomputation
segment (`nxd.checkpoint`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.nxd import functional
from nxcc.nxd.markers import checkpoint
from nxcc.nxd.model import Model
from nxcc.nxd.models.decoder.config import DecoderConfig


@lru_cache(maxsize=4)
def _causal_table(s: int, window: int | None) -> Dense:
    """bool[s, s]: key <= query (and query - key < window), made once per shape: every
    stage program of a model shares it, and at a real model's sequence it is large."""
    allowed = np.tri(s, dtype=bool)
    if window is not None and window < s:
        allowed &= ~np.tri(s, k=-window, dtype=bool)
    return Dense.of(allowed)


@lru_cache(maxsize=8)
def _rotary_tables(theta: float, d: int, s: int, dtype: DType) -> tuple[Dense, Dense]:
    """cos, sin [seq, head_dim] of the rotary positions, made once per shape."""
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    angles = np.arange(s, dtype=np.float64)[:, None] * inv[None, :]
    angles = np.concatenate([angles, angles], axis=1)
    return Dense.of(np.cos(angles), dtype), Dense.of(np.sin(angles), dtype)


class Attention:
    """The attention tables and core of `cfg` on `m`'s rank, for sequences of `seq`."""

    def __init__(self, m: Model, cfg: DecoderConfig, seq: int) -> None:
        self.m, self.cfg, self.seq = m, cfg, seq
        self.heads = cfg.num_attention_heads // m.tp_size
        self.kv = cfg.kv_heads * m.kv_replicator // m.tp_size
        self._mask: Value | None = None
        self._rotary: dict[int, tuple[Value, Value]] = {}

    def _expand(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        return self.m.b.broadcast_in_dim(x, shape=tuple(shape), broadcast_dimensions=tuple(dims))

    def prepare(self) -> None:
        """Build the tables every layer shares (see the module docstring)."""
        s = self.seq
        self.causal_mask((self.m.micro_batch, self.kv, self.heads // self.kv, s, s))
        if self.cfg.rotary:
            self.rotary_tables(self.heads)
            self.rotary_tables(self.kv)

    def causal_mask(self, shape: Sequence[int]) -> Value:
        """pred[shape] (scores' shape, last two dims query, key): key <= query, and with a
        sliding window W, query - key < W."""
        if self._mask is None:
            table = _causal_table(shape[-1], self.cfg.sliding_window)
            self._mask = self._expand(self.m.b.op(ops.constant, [], {"value": table}), shape,
                                      (len(shape) - 2, len(shape) - 1))
        return self._mask

    def rotary_tables(self, heads: int) -> tuple[Value, Value]:
        """cos, sin [batch, seq, heads, head_dim] for positions 0 .. seq-1 (HF's layout:
        frequencies theta^(-2i/d) for the first half, repeated for the second)."""
        if heads not in self._rotary:
            d, s = self.cfg.head_dim, self.seq
            shape = (self.m.micro_batch, s, heads, d)
            cos, sin = (self._expand(self.m.b.op(ops.constant, [], {"value": t}), shape, (1, 3))
                        for t in _rotary_tables(self.cfg.rope_theta, d, s, self.m.dtype))
            self._rotary[heads] = (cos, sin)
        return self._rotary[heads]

    def _rotate(self, x: Value) -> Value:
        """Rotary positions on x [batch, seq, heads, head_dim]."""
        b = self.m.b
        half = x.type.shape[-1] // 2
        x1, x2 = _slice_last(b, x, 0, half), _slice_last(b, x, half, 2 * half)
        turned = b.concatenate(b.negate(x2), x1, dimension=3)
        cos, sin = self.rotary_tables(x.type.shape[2])
        return b.add(b.multiply(x, cos), b.multiply(turned, sin))

    def heads_first(self, x: Value, heads: int, rotate: bool) -> Value:
        """[batch, seq, heads * d] -> [batch, heads, seq, d] (rotated for rotary positions)."""
        bsz, s, _ = x.type.shape
        x = self.m.b.reshape(x, (bsz, s, heads, self.cfg.head_dim))
        if rotate:
            x = self._rotate(x)
        return self.m.b.transpose(x, permutation=(0, 2, 1, 3))

    def split_qkv(self, qkv: Value) -> tuple[Value, Value, Value]:
        """The rank's q, k, v heads [batch, heads, seq, d] of its fused projection's
        columns (q heads | k heads | v heads)."""
        b, d = self.m.b, self.cfg.head_dim
        nq, nkv = self.heads * d, self.kv * d
        rotate = self.cfg.rotary
        q = self.heads_first(_slice_last(b, qkv, 0, nq), self.heads, rotate)
        k = self.heads_first(_slice_last(b, qkv, nq, nq + nkv), self.kv, rotate)
        v = self.heads_first(_slice_last(b, qkv, nq + nkv, nq + 2 * nkv), self.kv, False)
        return q, k, v

    def core(self, q: Value, k: Value, v: Value) -> Value:
        """Causal softmax attention of q [B, n, S, d] over k, v [B, kv, S, d] (each kv head
        serving n / kv consecutive query heads); the context [B, S, n d]."""
        m, b = self.m, self.m.b
        bsz, n, s, d = q.type.shape
        kv = k.type.shape[1]
        q5 = b.reshape(q, (bsz, kv, n // kv, s, d))
        with checkpoint(m, "selective"):
            scores = b.dot_general(q5, k, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                                   lhs_contracting_dims=(4,), rhs_contracting_dims=(3,))
            scores = b.multiply(scores, b.splat(1.0 / math.sqrt(d), scores.type))
            probs = functional.softmax(m, scores, self.causal_mask(scores.type.shape))
            ctx = b.dot_general(probs, v, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                                lhs_contracting_dims=(4,), rhs_contracting_dims=(2,))
        ctx = b.reshape(ctx, (bsz, n, s, d))
        ctx = b.transpose(ctx, permutation=(0, 2, 1, 3))
        return b.reshape(ctx, (bsz, s, n * d))


def _slice_last(b, x: Value, start: int, stop: int) -> Value:  # noqa: ANN001
    rank = x.type.rank
    return b.slice(x, start_indices=(0,) * (rank - 1) + (start,),
                   limit_indices=(*x.type.shape[:-1], stop), strides=(1,) * rank)
