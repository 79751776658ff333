"""A Vision Transformer classifier written with nxcc.nxd's parallel primitives.

`neuronx-cc train vit.yaml` builds it for every rank and trains it with the layout the YAML
asks for (tensor, sequence, pipeline and data parallelism). The image is cut into patches,
each projected to `hidden` features, plus a learned position embedding; `layers` pre-norm
transformer blocks (multi-head self-attention, a GELU MLP); the patches' mean through a
LayerNorm and a linear head gives the class logits. (Mean pooling, not a class token, keeps
the sequence a multiple of the tensor-parallel size for sequence parallelism.)

Layouts, per rank (B the micro-batch, N the patches, H `hidden`, TP the tensor-parallel
size): the patch embedding is replicated [B, N, H]; with sequence parallelism the blocks
work on [B, N / TP, H]; each block's q/k/v projection is column-parallel (this rank's
heads), its output projection and its MLP's second layer row-parallel; the head gives this
rank's classes [B, classes / TP] to the vocabulary-parallel cross-entropy.
"""

from __future__ import annotations

import math

from nxcc import nxd
from nxcc.ir.core import Value
from nxcc.nxd import Segment


def attention(m: nxd.Model, name: str, x: Value, hidden: int, heads: int) -> Value:
    """Multi-head self-attention of x [B, S(/TP), H]; returns [B, S(/TP), H]."""
    b, d = m.b, hidden // heads
    qkv = nxd.ColumnParallelLinear(m, f"{name}.qkv", hidden, [Segment(hidden, d)] * 3,
                                   gather_output=False, sequence_parallel_enabled=True)(x)
    batch, seq, width = qkv.type.shape
    local = width // 3 // d  # this rank's heads

    def heads_first(k: int) -> Value:
        part = b.slice(qkv, start_indices=(0, 0, k * local * d),
                       limit_indices=(batch, seq, (k + 1) * local * d), strides=(1, 1, 1))
        return b.transpose(b.reshape(part, (batch, seq, local, d)), permutation=(0, 2, 1, 3))

    q, k, v = heads_first(0), heads_first(1), heads_first(2)
    with nxd.checkpoint(m, "selective"):
        scores = b.dot_general(q, k, lhs_batch_dims=(0, 1), rhs_batch_dims=(0, 1),
                               lhs_contracting_dims=(3,), rhs_contracting_dims=(3,))
        scores = b.multiply(scores, b.splat(1.0 / math.sqrt(d), scores.type))
        ctx = b.dot_general(nxd.softmax(m, scores), v, lhs_batch_dims=(0, 1),
                            rhs_batch_dims=(0, 1), lhs_contracting_dims=(3,),
                            rhs_contracting_dims=(2,))
    ctx = b.reshape(b.transpose(ctx, permutation=(0, 2, 1, 3)), (batch, seq, local * d))
    return nxd.RowParallelLinear(m, f"{name}.proj", [Segment(hidden, d)], hidden,
                                 input_is_parallel=True, sequence_parallel_enabled=True)(ctx)


def block(m: nxd.Model, name: str, x: Value, hidden: int, heads: int, mlp: int) -> Value:
    b = m.b
    x = b.add(x, attention(m, f"{name}.attn", nxd.LayerNorm(m, f"{name}.norm1", hidden)(x),
                           hidden, heads))
    h = nxd.LayerNorm(m, f"{name}.norm2", hidden)(x)
    up = nxd.ColumnParallelLinear(m, f"{name}.fc1", hidden, mlp, gather_output=False,
                                  sequence_parallel_enabled=True)
    down = nxd.RowParallelLinear(m, f"{name}.fc2", mlp, hidden, input_is_parallel=True,
                                 sequence_parallel_enabled=True)
    return b.add(x, down(nxd.gelu(m, up(h))))


def patches(m: nxd.Model, images: Value, patch: int) -> Value:
    """uint8 images [B, C, I, I] -> floats in [0, 1], [B, (I / P)^2, P P C]."""
    b = m.b
    batch, channels, size, _ = images.type.shape
    g = size // patch
    x = b.convert(images, m.dtype)
    x = b.multiply(x, b.splat(1.0 / 255.0, x.type))
    x = b.reshape(x, (batch, channels, g, patch, g, patch))
    x = b.transpose(x, permutation=(0, 2, 4, 3, 5, 1))
    return b.reshape(x, (batch, g * g, patch * patch * channels))


def build(m: nxd.Model, image: int = 16, patch: int = 4, channels: int = 3, hidden: int = 32,
          heads: int = 4, layers: int = 4, mlp: int = 64, classes: int = 10
          ) -> tuple[Value, Value]:
    """The ViT on `m`'s rank; (the summed cross-entropy, the number of images)."""
    b = m.b
    images = m.input("images", (channels, image, image), "uint8")
    labels = m.input("labels", (), "int32")
    x = nxd.ColumnParallelLinear(m, "patch_embed", patch * patch * channels, hidden,
                                 gather_output=True)(patches(m, images, patch))
    positions = m.parameter("pos_embed", x.type.shape[1:])
    x = b.add(x, b.broadcast_in_dim(positions, shape=x.type.shape, broadcast_dimensions=(1, 2)))
    x = nxd.scatter_to_sequence_parallel_region(m, x)
    nxd.pipeline_cut(m, "embed")
    for i in range(layers):
        with nxd.checkpoint(m, "full"):
            x = block(m, f"blocks.{i}", x, hidden, heads, mlp)
        nxd.pipeline_cut(m, f"blocks.{i}")
    x = nxd.LayerNorm(m, "norm", hidden)(x)
    x = nxd.gather_from_sequence_parallel_region(m, x, to_model_parallel=False)
    pooled = nxd.mean(m, x, (1,))  # [B, H]
    logits = nxd.ColumnParallelLinear(m, "head", hidden, classes, gather_output=False)(pooled)
    return nxd.parallel_cross_entropy(m, logits, labels)

