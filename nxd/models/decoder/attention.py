"""The decoder's attention core on one rank: the causal mask, rotary positions, and the
grouped-query softmax attention of the rank's heads.

q, k, v arrive as [batch, seq, heads * head_dim] column slices of the fused projection
(this rank's heads); `heads_first` reshapes them to [batch, heads, seq, head_dim] (rotated
for rotary positions) and `core` computes the context [batch, seq, heads * head_dim]. The
tables (mask, cos and sin) depend on nothing but the shapes: they are built once, before
the layers (`prepare`), so no layer's recomputation owns them and a pipeline stage that
reads them rebuilds them. The scores-to-context products are one `selective` recomputation
segment (`nxd.checkpoint`).

From `2 * QUERY_BLOCK` positions on, `core` computes the attention by blocks of
`QUERY_BLOCK` queries, each over the keys its mask lets it see (`query_blocks`): the keys
up to its last query (from its first query's window on, with a sliding window), so that the
scores, their softmax and both products skip most of the masked half (a quarter of the work
at 256 positions, three eighths at 512), forward and backward. A query's row is the same
softmax: the keys it leaves out are masked entries, whose exp is exactly 0.
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

#: queries per block of `core` (`query_blocks`)
QUERY_BLOCK = 128


def query_blocks(s: int, window: int | None) -> list[tuple[int, int, int, int]]:
    """(first query, end of queries, first key, end of keys) of each block of `core` for
    sequences of `s` positions: one block of everything under 2 x QUERY_BLOCK positions;
    else blocks of QUERY_BLOCK consecutive queries (the last one takes the rest), each over
    the keys from its first query's window start (0 without a window) to its last query."""
    if s < 2 * QUERY_BLOCK:
        return [(0, s, 0, s)]
    starts = list(range(0, s - QUERY_BLOCK + 1, QUERY_BLOCK))
    ends = [*starts[1:], s]
    return [(q0, q1, 0 if window is None else max(0, q0 - window + 1), q1)
            for q0, q1 in zip(starts, ends, strict=True)]


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
        self._masks: dict[tuple[int, int, int, int], Value] = {}
        self._rotary: dict[int, tuple[Value, Value]] = {}

    def _expand(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        return self.m.b.broadcast_in_dim(x, shape=tuple(shape), broadcast_dimensions=tuple(dims))

    def prepare(self) -> None:
        """Build the tables every layer shares (see the module docstring)."""
        for block in query_blocks(self.seq, self.cfg.sliding_window):
            self.causal_mask(block)
        if self.cfg.rotary:
            self.rotary_tables(self.heads)
            self.rotary_tables(self.kv)

    def causal_mask(self, block: tuple[int, int, int, int]) -> Value:
        """pred[batch, kv, heads / kv, queries, keys] of a block of `query_blocks` (its
        scores' shape): key <= query, and with a sliding window W, query - key < W."""
        if block not in self._masks:
            q0, q1, k0, k1 = block
            table = _causal_table(self.seq, self.cfg.sliding_window)
            if block != (0, self.seq, 0, self.seq):
                table = Dense.of(np.asarray(table.array)[q0:q1, k0:k1])
            shape = (self.m.micro_batch, self.kv, self.heads // self.kv, q1 - q0, k1 - k0)
            self._masks[block] = self._expand(
                self.m.b.op(ops.constant, [], {"value": table}), shape, (3, 4))
        return self._masks[block]

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
        serving n / kv consecutive query heads); the context [B, S, n d]. By blocks of
        queries over the keys they see (`query_blocks`), the blocks' contexts joined."""
        m, b = self.m, self.m.b
        bsz, n, s, d = q.type.shape
        kv = k.type.shape[1]
        q5 = b.reshape(q, (bsz, kv, n // kv, s, d))
        parts = []
        with checkpoint(m, "selective"):
            for block in query_blocks(s, self.cfg.sliding_window):
                q0, q1, k0, k1 = block
                scores = b.dot_general(_rows(b, q5, 3, q0, q1), _rows(b, k, 2, k0, k1),
                                       lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                                       lhs_contracting_dims=(4,), rhs_contracting_dims=(3,))
                scores = b.multiply(scores, b.splat(1.0 / math.sqrt(d), scores.type))
                probs = functional.softmax(m, scores, self.causal_mask(block))
                parts.append(b.dot_general(probs, _rows(b, v, 2, k0, k1),
                                           lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                                           lhs_contracting_dims=(4,),
                                           rhs_contracting_dims=(2,)))
            ctx = parts[0] if len(parts) == 1 else b.concatenate(*parts, dimension=3)
        ctx = b.reshape(ctx, (bsz, n, s, d))
        ctx = b.transpose(ctx, permutation=(0, 2, 1, 3))
        return b.reshape(ctx, (bsz, s, n * d))


def _rows(b, x: Value, dim: int, start: int, stop: int) -> Value:  # noqa: ANN001
    """x[..., start:stop, ...] along `dim` (x itself when that is all of it)."""
    if (start, stop) == (0, x.type.shape[dim]):
        return x
    lo = [0] * x.type.rank
    hi = list(x.type.shape)
    lo[dim], hi[dim] = start, stop
    return b.slice(x, start_indices=tuple(lo), limit_indices=tuple(hi),
                   strides=(1,) * x.type.rank)


def _slice_last(b, x: Value, start: int, stop: int) -> Value:  # noqa: ANN001
    rank = x.type.rank
    return b.slice(x, start_indices=(0,) * (rank - 1) + (start,),
                   limit_indices=(*x.type.shape[:-1], stop), strides=(1,) * rank)
