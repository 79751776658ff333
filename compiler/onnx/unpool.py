"""Inverse window operators: MaxUnpool (a scatter into zeros) and Col2Im (overlapping
blocks summed back into an image, one interior-padded add per kernel offset)."""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import NodeContext
from nxcc.compiler.onnx.gather_scatter import replace_computation
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


@converts("MaxUnpool")
def convert_max_unpool(ctx: NodeContext) -> list[Value]:
    """Zeros of the unpooled shape ((in - 1) * stride - pads + kernel, or output_shape),
    with X's values written at the flat positions `I` gives (as MaxPool's Indices)."""
    b, x, idx = ctx.b, ctx.input(0, "X"), ctx.input(1, "I")
    n = x.type.rank - 2
    kernel = [int(k) for k in ctx.attr("kernel_shape")]
    strides = [int(s) for s in ctx.attr("strides", [1] * n)]
    pads = [int(p) for p in ctx.attr("pads", [0] * 2 * n)]
    if n < 1 or len(kernel) != n or idx.type.shape != x.type.shape:
        raise ctx.fail(f"X {x.type} and I {idx.type} must be N x C x D... with a "
                       f"{n}-D kernel_shape")
    inferred = [*x.type.shape[:2], *[(d - 1) * s - (pads[i] + pads[i + n]) + k for i, (d, s, k)
                                     in enumerate(zip(x.type.shape[2:], strides, kernel,
                                                      strict=True))]]
    shape = inferred
    if ctx.optional(2) is not None:
        shape = [int(v) for v in ctx.const_input(2, "output_shape").reshape(-1)]
    total = math.prod(inferred)
    flat = b.splat(0, x.type.with_shape((total,)))
    where = b.reshape(b.convert(idx, DType.S64), (x.type.size, 1))
    flat = b.scatter(flat, where, b.reshape(x, (x.type.size,)), update_window_dims=(),
                     inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
                     index_vector_dim=1, computation=replace_computation(b, x.type.dtype))
    y = b.reshape(flat, inferred)
    if shape != inferred:
        zero = b.constant(np.zeros((), x.type.dtype.numpy))
        rank = len(shape)
        y = b.pad(y, zero, low=(0,) * rank,
                  high=tuple(s - i for s, i in zip(shape, inferred, strict=True)),
                  interior=(0,) * rank)
    return [y]


@converts("Col2Im")
def convert_col2im(ctx: NodeContext) -> list[Value]:
    """[N, C * prod(block), L] -> [N, C, *image_shape]: the block at each of the L sliding
    positions (row-major) added back where im2col took it from."""
    b, x = ctx.b, ctx.input(0, "input")
    image = [int(v) for v in ctx.const_input(1, "image_shape").reshape(-1)]
    block = [int(v) for v in ctx.const_input(2, "block_shape").reshape(-1)]
    n = len(image)
    dil = [int(v) for v in ctx.attr("dilations", [1] * n)]
    strides = [int(v) for v in ctx.attr("strides", [1] * n)]
    pads = [int(v) for v in ctx.attr("pads", [0] * 2 * n)]
    counts = [(image[i] + pads[i] + pads[i + n] - dil[i] * (block[i] - 1) - 1) // strides[i]
              + 1 for i in range(n)]
    kprod = math.prod(block)
    if x.type.rank != 3 or x.type.shape[1] % kprod or x.type.shape[2] != math.prod(counts):
        raise ctx.fail(f"input {x.type} does not hold {counts} blocks of {block}")
    batch, c = x.type.shape[0], x.type.shape[1] // kprod
    cols = b.reshape(x, (batch, c, kprod, *counts))
    zero = b.constant(np.zeros((), x.type.dtype.numpy))
    padded = [image[i] + pads[i] + pads[i + n] for i in range(n)]
    acc = b.splat(0, x.type.with_shape((batch, c, *padded)))
    for k, offset in enumerate(np.ndindex(*block)):
        part = b.slice(cols, start_indices=(0, 0, k, *(0,) * n),
                       limit_indices=(batch, c, k + 1, *counts), strides=(1,) * (n + 3))
        part = b.reshape(part, (batch, c, *counts))
        low = [o * d for o, d in zip(offset, dil, strict=True)]
        high = [padded[i] - (low[i] + (counts[i] - 1) * strides[i] + 1) for i in range(n)]
        placed = b.pad(part, zero, low=(0, 0, *low), high=(0, 0, *high),
                       interior=(0, 0, *[s - 1 for s in strides]))
        acc = b.add(acc, placed)
    if any(pads):
        acc = b.slice(acc, start_indices=(0, 0, *pads[:n]),
                      limit_indices=(batch, c, *[pads[i] + image[i] for i in range(n)]),
                      strides=(1,) * (n + 2))
    return [acc]


