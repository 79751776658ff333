"""IR building blocks of the decoder on one tensor-parallel rank (`Blocks`).

Activations are [batch, seq, hidden]; with sequence parallelism the seq axis (1) of the
values between blocks holds this rank's 1/TP of the sequence. Tensor parallelism is
explicit, as Megatron writes it, with group-local replica groups [[0 .. TP-1]]:

- `enter_parallel(x)`: before a column-parallel product, `tp_copy(x)` (its gradient an
  all_reduce), or with sequence parallelism `all_gather(x)` along the sequence;
- `leave_parallel(y)`: after a row-parallel product, `all_reduce(y)`, or with sequence
  parallelism `reduce_scatter(y)` along the sequence.
With TP = 1 both are the value itself. `Blocks.stop` collects the values no gradient flows
through (the softmax and log-sum-exp shifts), `Blocks.core_attention` the ops of each
layer's attention core (scores, softmax, context product: what `selective` recomputes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from nxcc.compiler.decoder.config import DecoderConfig, StagePlan
from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.builder import Builder
from nxcc.ir.core import Op, Value
from nxcc.ir.dtypes import DType
from nxcc.passes.autodiff.losses import reduce_all

NEG = -1e30  # the masked scores' value (exp gives exactly 0)


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


class Blocks:
    """Builds one rank's decoder ops through `b`."""

    def __init__(self, b: Builder, cfg: DecoderConfig, plan: StagePlan) -> None:
        self.b, self.cfg, self.plan = b, cfg, plan
        self.tp = plan.tp_size
        self.dtype = DType.F64 if cfg.dtype == "float64" else DType.F32
        self.groups = (tuple(range(self.tp)),)
        self.sp = plan.sequence_parallel and self.tp > 1
        self.stop: list[Value] = []
        self.core_attention: list[list[Op]] = []
        self.heads = cfg.num_attention_heads // self.tp
        self.kv = cfg.kv_heads * plan.kv_replicator // self.tp
        self._mask: Value | None = None
        self._rotary: dict[int, tuple[Value, Value]] = {}

    # small helpers

    def scalar(self, value: float, like: Value) -> Value:
        return self.b.splat(value, like.type)

    def expand(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        return self.b.broadcast_in_dim(x, shape=tuple(shape), broadcast_dimensions=tuple(dims))

    def last(self, v: Value, shape: Sequence[int]) -> Value:
        """A value over all but the last dim of `shape`, broadcast along it."""
        return self.expand(v, shape, range(len(shape) - 1))

    def feature(self, w: Value, shape: Sequence[int]) -> Value:
        """A [features] vector broadcast along the last dim of `shape`."""
        return self.expand(w, shape, (len(shape) - 1,))

    def matmul(self, x: Value, w: Value) -> Value:
        return self.b.dot_general(x, w, lhs_contracting_dims=(x.type.rank - 1,),
                                  rhs_contracting_dims=(0,))

    def linear(self, x: Value, w: Value, bias: Value | None = None) -> Value:
        y = self.matmul(x, w)
        return y if bias is None else self.b.add(y, self.feature(bias, y.type.shape))

    def slice_last(self, x: Value, start: int, stop: int) -> Value:
        rank = x.type.rank
        return self.b.slice(x, start_indices=(0,) * (rank - 1) + (start,),
                            limit_indices=(*x.type.shape[:-1], stop), strides=(1,) * rank)

    # tensor-parallel regions

    def enter_parallel(self, x: Value) -> Value:
        if self.tp == 1:
            return x
        if self.sp:
            return self.b.all_gather(x, dimension=1, replica_groups=self.groups)
        return self.b.tp_copy(x, replica_groups=self.groups)

    def leave_parallel(self, y: Value) -> Value:
        if self.tp == 1:
            return y
        if self.sp:
            return self.b.reduce_scatter(y, dimension=1, reduction="sum",
                                         replica_groups=self.groups)
        return self.b.all_reduce(y, reduction="sum", replica_groups=self.groups)

    # norms and activations

    def norm(self, x: Value, weight: Value, bias: Value | None) -> Value:
        """LayerNorm (with its bias) or RMSNorm over the last dim."""
        b, shape = self.b, x.type.shape
        h = float(shape[-1])
        last = (len(shape) - 1,)
        if self.cfg.layer_norm:
            total = reduce_all(b, x, "add", last)
            x = b.subtract(x, self.last(b.divide(total, b.splat(h, total.type)), shape))
        square = reduce_all(b, b.multiply(x, x), "add", last)
        var = b.divide(square, b.splat(h, square.type))
        inv = b.rsqrt(b.add(var, b.splat(self.cfg.norm_eps, var.type)))
        y = b.multiply(b.multiply(x, self.last(inv, shape)), self.feature(weight, shape))
        return y if bias is None else b.add(y, self.feature(bias, shape))

    def gelu(self, x: Value) -> Value:
        """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2's form)."""
        b = self.b
        cube = b.multiply(b.multiply(x, x), x)
        inner = b.add(x, b.multiply(cube, self.scalar(0.044715, x)))
        t = b.tanh(b.multiply(inner, self.scalar(math.sqrt(2.0 / math.pi), x)))
        return b.multiply(b.multiply(x, self.scalar(0.5, x)), b.add(t, self.scalar(1.0, x)))

    def silu(self, x: Value) -> Value:
        return self.b.multiply(x, self.b.logistic(x))

    # attention

    def prepare(self) -> None:
        """Build the tables every layer shares (the causal mask, the rotary cos and sin)
        once, before the layers, so that no layer's recomputation owns them."""
        s = self.plan.seq_length
        self.causal_mask((self.plan.micro_batch, self.kv, self.heads // self.kv, s, s))
        if self.cfg.rotary:
            self.rotary_tables(self.heads)
            self.rotary_tables(self.kv)

    def causal_mask(self, shape: Sequence[int]) -> Value:
        """pred[shape] (scores' shape, last two dims query, key): key <= query, and with a
        sliding window W, query - key < W."""
        if self._mask is None:
            table = _causal_table(shape[-1], self.cfg.sliding_window)
            self._mask = self.expand(self.b.op(ops.constant, [], {"value": table}), shape,
                                     (len(shape) - 2, len(shape) - 1))
        return self._mask

    def rotary_tables(self, heads: int) -> tuple[Value, Value]:
        """cos, sin [batch, seq, heads, head_dim] for positions 0 .. seq-1 (HF's layout:
        frequencies theta^(-2i/d) for the first half, repeated for the second)."""
        if heads not in self._rotary:
            d, s = self.cfg.head_dim, self.plan.seq_length
            shape = (self.plan.micro_batch, s, heads, d)
            self._rotary[heads] = tuple(  # type: ignore[assignment]
                self.expand(self.b.op(ops.constant, [], {"value": t}), shape, (1, 3))
                for t in _rotary_tables(self.cfg.rope_theta, d, s, self.dtype))
        return self._rotary[heads]

    def rotate(self, x: Value) -> Value:
        """Rotary positions on x [batch, seq, heads, head_dim]."""
        b = self.b
        half = x.type.shape[-1] // 2
        x1, x2 = self.slice_last(x, 0, half), self.slice_last(x, half, 2 * half)
        turned = b.concatenate(b.negate(x2), x1, dimension=3)
        cos, sin = self.rotary_tables(x.type.shape[2])
        return b.add(b.multiply(x, cos), b.multiply(turned, sin))

    def heads_first(self, x: Value, heads: int, rotate: bool) -> Value:
        """[batch, seq, heads * d] -> [batch, heads, seq, d] (rotated for llama)."""
        bsz, s, _ = x.type.shape
        x = self.b.reshape(x, (bsz, s, heads, self.cfg.head_dim))
        if rotate:
            x = self.rotate(x)
        return self.b.transpose(x, permutation=(0, 2, 1, 3))

    def attention_core(self, q: Value, k: Value, v: Value) -> Value:
        """Causal softmax attention of q [B, n, S, d] over k, v [B, kv, S, d] (each kv head
        serving n / kv consecutive query heads); the context [B, S, n d]."""
        b = self.b
        bsz, n, s, d = q.type.shape
        kv = k.type.shape[1]
        group = n // kv
        q5 = b.reshape(q, (bsz, kv, group, s, d))
        start = len(b.function.body)
        scores = b.dot_general(q5, k, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                               lhs_contracting_dims=(4,), rhs_contracting_dims=(3,))
        scores = b.multiply(scores, self.scalar(1.0 / math.sqrt(d), scores))
        shape = scores.type.shape
        scores = b.select(self.causal_mask(shape), scores, self.scalar(NEG, scores))
        last = (len(shape) - 1,)
        top = reduce_all(b, scores, "maximum", last)
        self.stop.append(top)
        e = b.exp(b.subtract(scores, self.last(top, shape)))
        probs = b.divide(e, self.last(reduce_all(b, e, "add", last), shape))
        ctx = b.dot_general(probs, v, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                            lhs_contracting_dims=(4,), rhs_contracting_dims=(2,))
        self.core_attention.append(b.function.body[start:])
        ctx = b.reshape(ctx, (bsz, n, s, d))
        ctx = b.transpose(ctx, permutation=(0, 2, 1, 3))
        return b.reshape(ctx, (bsz, s, n * d))
