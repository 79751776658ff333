"""A T5-style encoder-decoder written with nxcc.nxd's parallel primitives.

`neuronx-cc train t5.yaml` builds it for every rank and trains it with the layout the YAML
asks for. As T5: one vocabulary-parallel embedding shared by the encoder's input, the
decoder's input and the output head (the table transposed, the hidden state scaled by
hidden^-0.5); pre-norm blocks with RMSNorm and no biases; learned relative position biases
(here one table per layer, distances clipped to `buckets`, bidirectional in the encoder and
causal in the decoder); a ReLU feed-forward; the decoder's self-attention causal and its
cross-attention over the encoder's output.

Layouts, per rank (B the micro-batch, S the source and T the target length, H `hidden`, TP
the tensor-parallel size): with sequence parallelism the blocks work on [B, S / TP, H] and
[B, T / TP, H]; q/k/v projections are column-parallel (this rank's heads, and this rank's
columns of each relative-bias table), output projections and the feed-forward's second
layer row-parallel; the head gives this rank's part of the vocabulary [B, T, V / TP] to the
vocabulary-parallel cross-entropy. With pipeline stages the embedding's copies (first stage,
the stage of the decoder's input, last stage) have their gradients summed by the engine.
"""

from __future__ import annotations

import math

import numpy as np

from nxcc import nxd
from nxcc.ir.core import Value
from nxcc.nxd import Segment


def relative_bias(m: nxd.Model, name: str, queries: int, keys: int, heads: int, buckets: int,
                  causal: bool) -> Value:
    """This rank's heads' learned bias [heads / TP, queries, keys] of each key's distance
    from the query (clipped to `buckets` values; only backwards when `causal`)."""
    b = m.b
    distance = np.arange(keys)[None, :] - np.arange(queries)[:, None]
    bucket = np.clip(-distance, 0, buckets - 1) if causal else \
        np.clip(distance, -(buckets // 2), buckets - buckets // 2 - 1) + buckets // 2
    table = m.parameter(name, (buckets, heads), axis=1)  # split by heads
    local = table.type.shape[1]
    picked = b.gather(table, b.constant(bucket.astype(np.int32)), offset_dims=(2,),
                      collapsed_slice_dims=(0,), start_index_map=(0,), index_vector_dim=2,
                      slice_sizes=(1, local))
    return b.transpose(picked, permutation=(2, 0, 1))


def attention(m: nxd.Model, name: str, x: Value, memory: Value | None, hidden: int,
              heads: int, bias: Value, mask: np.ndarray | None) -> Value:
    """Multi-head attention of x [B, T(/TP), H] over itself, or over `memory`
    [B, S(/TP), H] (cross-attention), with `bias` added to the scores and keys outside the
    boolean `mask` [T, S] left out."""
    b, d = m.b, hidden // heads
    if memory is None:
        qkv = nxd.ColumnParallelLinear(m, f"{name}.qkv", hidden, [Segment(hidden, d)] * 3,
                                       bias=False, gather_output=False,
                                       sequence_parallel_enabled=True)(x)
        parts = [(qkv, k, 3) for k in range(3)]
    else:
        q = nxd.ColumnParallelLinear(m, f"{name}.q", hidden, [Segment(hidden, d)], bias=False,
                                     gather_output=False, sequence_parallel_enabled=True)(x)
        kv = nxd.ColumnParallelLinear(m, f"{name}.kv", hidden, [Segment(hidden, d)] * 2,
                                      bias=False, gather_output=False,
                                      sequence_parallel_enabled=True)(memory)
        parts = [(q, 0, 1), (kv, 0, 2), (kv, 1, 2)]

    def heads_first(value: Value, k: int, of: int) -> Value:
        batch, seq, width = value.type.shape
        local = width // of
        part = b.slice(value, start_indices=(0, 0, k * local),
                       limit_indices=(batch, seq, (k + 1) * local), strides=(1, 1, 1))
        part = b.reshape(part, (batch, seq, local // d, d))
        return b.transpose(part, permutation=(0, 2, 1, 3))

    q, k, v = (heads_first(*p) for p in parts)
    with nxd.checkpoint(m, "selective"):
        scores = b.dot_general(q, k, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                               lhs_contracting_dims=(3,), rhs_contracting_dims=(3,))
        scores = b.multiply(scores, b.splat(1.0 / math.sqrt(d), scores.type))
        shape = scores.type.shape
        scores = b.add(scores, b.broadcast_in_dim(bias, shape=shape,
                                                  broadcast_dimensions=(1, 2, 3)))
        allowed = None if mask is None else b.broadcast_in_dim(
            b.constant(mask), shape=shape, broadcast_dimensions=(2, 3))
        ctx = b.dot_general(nxd.softmax(m, scores, allowed), v, lhs_batch_dims=(0, 1),
                            rhs_batch_dims=(0, 1), lhs_contracting_dims=(3,),
                            rhs_contracting_dims=(2,))
    batch, local, seq, _ = ctx.type.shape
    ctx = b.reshape(b.transpose(ctx, permutation=(0, 2, 1, 3)), (batch, seq, local * d))
    return nxd.RowParallelLinear(m, f"{name}.o", [Segment(hidden, d)], hidden, bias=False,
                                 input_is_parallel=True, sequence_parallel_enabled=True)(ctx)


def feed_forward(m: nxd.Model, name: str, x: Value, hidden: int, ffn: int) -> Value:
    b = m.b
    h = nxd.ColumnParallelLinear(m, f"{name}.wi", hidden, ffn, bias=False, gather_output=False,
                                 sequence_parallel_enabled=True)(x)
    h = b.maximum(h, b.splat(0.0, h.type))
    return nxd.RowParallelLinear(m, f"{name}.wo", ffn, hidden, bias=False,
                                 input_is_parallel=True, sequence_parallel_enabled=True)(h)


def build(m: nxd.Model, vocab: int = 64, hidden: int = 32, heads: int = 4, ffn: int = 64,
          encoder_layers: int = 2, decoder_layers: int = 2, source: int = 8, target: int = 8,
          buckets: int = 8) -> tuple[Value, Value]:
    """The encoder-decoder on `m`'s rank; (the summed cross-entropy over the target
    tokens whose label is not -100, their number)."""
    b = m.b
    src = m.input("encoder_tokens", (source,), "int32")
    tgt = m.input("decoder_tokens", (target,), "int32")
    labels = m.input("labels", (target,), "int32")
    shared = nxd.ParallelEmbedding(m, "shared", vocab, hidden, sequence_parallel_enabled=True)
    x = shared(src)
    nxd.pipeline_cut(m, "encoder.embed")
    for i in range(encoder_layers):
        pre = f"encoder.{i}"
        with nxd.checkpoint(m, "full"):
            bias = relative_bias(m, f"{pre}.relative_bias", source, source, heads, buckets,
                                 False)
            h = nxd.RMSNorm(m, f"{pre}.norm1", hidden)(x)
            x = b.add(x, attention(m, f"{pre}.self", h, None, hidden, heads, bias, None))
            h = nxd.RMSNorm(m, f"{pre}.norm2", hidden)(x)
            x = b.add(x, feed_forward(m, f"{pre}.ff", h, hidden, ffn))
        nxd.pipeline_cut(m, pre)
    memory = nxd.RMSNorm(m, "encoder.final_norm", hidden)(x)
    y = shared(tgt)
    causal = np.tril(np.ones((target, target), dtype=bool))
    for j in range(decoder_layers):
        pre = f"decoder.{j}"
        with nxd.checkpoint(m, "full"):
            bias = relative_bias(m, f"{pre}.relative_bias", target, target, heads, buckets,
                                 True)
            h = nxd.RMSNorm(m, f"{pre}.norm1", hidden)(y)
            y = b.add(y, attention(m, f"{pre}.self", h, None, hidden, heads, bias, causal))
            h = nxd.RMSNorm(m, f"{pre}.norm2", hidden)(y)
            zero = b.splat(0.0, bias.type.with_shape((bias.type.shape[0], target, source)))
            y = b.add(y, attention(m, f"{pre}.cross", h, memory, hidden, heads, zero, None))
            h = nxd.RMSNorm(m, f"{pre}.norm3", hidden)(y)
            y = b.add(y, feed_forward(m, f"{pre}.ff", h, hidden, ffn))
        nxd.pipeline_cut(m, pre)
    y = nxd.RMSNorm(m, "decoder.final_norm", hidden)(y)
    y = b.multiply(y, b.splat(hidden ** -0.5, y.type))
    h = nxd.gather_from_sequence_parallel_region(m, y)  # into the tensor-parallel region
    logits = nxd.matmul(m, h, b.transpose(shared.weight, permutation=(1, 0)))
    return nxd.parallel_cross_entropy(m, logits, labels)
