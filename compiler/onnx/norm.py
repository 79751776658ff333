"""Normalizations: BatchNormalization (inference and training mode), LayerNormalization,
InstanceNormalization, GroupNormalization, LpNormalization, as elementwise ops and
reductions."""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import (
    NodeContext,
    binary,
    float_type_of,
    reduce,
    splat_like,
)
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


def _channel_param(ctx: NodeContext, v: Value, shape: tuple[int, ...]) -> Value:
    """A per-channel parameter ([C], or [C, D...] for opset < 9 spatial=0) broadcast to the
    NC... `shape`."""
    if v.type.shape != shape[1:1 + v.type.rank] or v.type.rank == 0:
        raise ctx.fail(f"parameter {v.type} does not match the channels of {shape}")
    return ctx.b.op(ops.broadcast_in_dim, [v], {
        "shape": shape, "broadcast_dimensions": tuple(range(1, 1 + v.type.rank))})


@converts("BatchNormalization")
def convert_batch_norm(ctx: NodeContext) -> list[Value]:
    """y = x * k + (B - mean * k) with k = scale / sqrt(var + epsilon) per channel (the
    [C]-sized math runs once; the full-size tensor sees one multiply and one add)."""
    b, x = ctx.b, ctx.input(0, "X")
    if int(ctx.attr("training_mode", 0)):
        return _batch_norm_training(ctx)
    for i in range(1, 5):
        if ctx.output_used(i):
            raise ctx.unsupported(f"output {i} (training statistics)")
    float_type_of(ctx, x)
    scale, bias, mean, var = (ctx.input(i, w) for i, w in
                              enumerate(("scale", "B", "input_mean", "input_var"), start=1))
    scale, bias, mean, var = (b.convert(v, x.type.dtype) for v in (scale, bias, mean, var))
    eps = float(ctx.attr("epsilon", 1e-5))
    k = b.multiply(scale, b.rsqrt(b.add(var, splat_like(b, eps, var))))
    shift = b.subtract(bias, b.multiply(mean, k))
    y = b.multiply(x, _channel_param(ctx, k, x.type.shape))
    return [b.add(y, _channel_param(ctx, shift, x.type.shape))]


def _batch_norm_training(ctx: NodeContext) -> list[Value]:
    """training_mode=1 (opset 14+): normalize with the batch's own mean and (population)
    variance over every dim but the channels; the running statistics outputs are
    input_mean * momentum + batch_mean * (1 - momentum), and likewise the variance."""
    b, x = ctx.b, ctx.input(0, "X")
    float_type_of(ctx, x)
    dims = [d for d in range(x.type.rank) if d != 1]
    scale, bias, mean, var = (b.convert(ctx.input(i, w), x.type.dtype) for i, w in
                              enumerate(("scale", "B", "input_mean", "input_var"), start=1))
    count = max(math.prod(x.type.shape[d] for d in dims), 1)
    batch_mean = b.divide(reduce(b, x, dims, ops.add), splat_like(b, count, scale))
    centered = b.subtract(x, _channel_param(ctx, batch_mean, x.type.shape))
    batch_var = b.divide(reduce(b, b.multiply(centered, centered), dims, ops.add),
                         splat_like(b, count, scale))
    eps = float(ctx.attr("epsilon", 1e-5))
    k = b.multiply(scale, b.rsqrt(b.add(batch_var, splat_like(b, eps, batch_var))))
    y = b.add(b.multiply(centered, _channel_param(ctx, k, x.type.shape)),
              _channel_param(ctx, bias, x.type.shape))
    momentum = float(ctx.attr("momentum", 0.9))

    def running(old: Value, batch: Value) -> Value:
        return b.add(b.multiply(old, splat_like(b, momentum, old)),
                     b.multiply(batch, splat_like(b, 1.0 - momentum, batch)))

    return [y, running(mean, batch_mean), running(var, batch_var)]


@converts("LpNormalization")
def convert_lp_normalization(ctx: NodeContext) -> list[Value]:
    """x / (sum |x|^p along axis)^(1/p) for p = 1 or 2; 0 where the norm is 0."""
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    axis = ctx.axis(int(ctx.attr("axis", -1)), x.type.rank)
    p = int(ctx.attr("p", 2))
    if p not in (1, 2):
        raise ctx.fail(f"p must be 1 or 2, got {p}")
    if p == 1:
        norm = reduce(b, b.abs(x), [axis], ops.add, keepdims=True)
    else:
        norm = b.sqrt(reduce(b, b.multiply(x, x), [axis], ops.add, keepdims=True))
    norm = b.broadcast_to(norm, x.type.shape)
    zero = splat_like(b, 0, x)
    is_zero = b.compare(norm, zero, direction="EQ")
    return [b.select(is_zero, zero, b.divide(x, norm))]


def _stash(ctx: NodeContext, x: Value) -> DType:
    """The type statistics are computed in: f32 for 16-bit inputs when stash_type is 1."""
    dtype = float_type_of(ctx, x)
    if int(ctx.attr("stash_type", 1)) == 1 and dtype in (DType.F16, DType.BF16):
        return DType.F32
    return dtype


def normalize(b: Builder, x: Value, dims: list[int], eps: float) -> tuple[Value, Value, Value]:
    """(x - mean) / sqrt(var + eps) over `dims`, with the mean and 1 / sqrt(var + eps) (both
    with `dims` kept as size 1)."""
    count = max(math.prod(x.type.shape[d] for d in dims), 1)
    total = reduce(b, x, dims, ops.add, keepdims=True)
    mean = b.divide(total, splat_like(b, count, total))
    centered = binary(b, ops.subtract, x, mean)
    sq = reduce(b, b.multiply(centered, centered), dims, ops.add, keepdims=True)
    var = b.divide(sq, splat_like(b, count, sq))
    inv = b.rsqrt(b.add(var, splat_like(b, eps, var)))
    return binary(b, ops.multiply, centered, inv), mean, inv


@converts("LayerNormalization")
def convert_layer_norm(ctx: NodeContext) -> list[Value]:
    """Normalize over dims axis.. (default -1), then * Scale + B (both broadcast to X)."""
    b, x = ctx.b, ctx.input(0, "X")
    stash = _stash(ctx, x)
    axis = ctx.axis(int(ctx.attr("axis", -1)), x.type.rank)
    dims = list(range(axis, x.type.rank))
    y, mean, inv = normalize(b, b.convert(x, stash), dims, float(ctx.attr("epsilon", 1e-5)))
    y = b.convert(y, x.type.dtype)
    y = b.multiply(y, b.broadcast_to(ctx.input(1, "Scale"), x.type.shape))
    bias = ctx.optional(2)
    if bias is not None:
        y = b.add(y, b.broadcast_to(bias, x.type.shape))
    return [y, mean, inv]


@converts("InstanceNormalization")
def convert_instance_norm(ctx: NodeContext) -> list[Value]:
    """Normalize each (n, c) over the spatial dims, then * scale[c] + B[c]."""
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    if x.type.rank < 3:
        raise ctx.fail(f"input must be N x C x D1 x ..., got {x.type}")
    dims = list(range(2, x.type.rank))
    y, _, _ = normalize(b, x, dims, float(ctx.attr("epsilon", 1e-5)))
    y = b.multiply(y, _channel_param(ctx, ctx.input(1, "scale"), x.type.shape))
    return [b.add(y, _channel_param(ctx, ctx.input(2, "B"), x.type.shape))]


@converts("GroupNormalization")
def convert_group_norm(ctx: NodeContext) -> list[Value]:
    """Normalize each group of C / num_groups channels, then * scale[c] + bias[c] (opset 21;
    the per-group scale of opset 18 is deprecated, and onnx.checker refuses it)."""
    b, x = ctx.b, ctx.input(0, "X")
    stash = _stash(ctx, x)
    groups = int(ctx.attr("num_groups"))
    if x.type.rank < 2 or groups < 1 or x.type.shape[1] % groups:
        raise ctx.fail(f"num_groups {groups} must divide the channels of {x.type}")
    n = x.type.shape[0]
    grouped = b.reshape(b.convert(x, stash), (n, groups, x.type.size // max(n * groups, 1)))
    y, _, _ = normalize(b, grouped, [2], float(ctx.attr("epsilon", 1e-5)))
    y = b.convert(y, x.type.dtype)
    y = b.reshape(y, x.type.shape)
    y = b.multiply(y, _channel_param(ctx, ctx.input(1, "scale"), x.type.shape))
    return [b.add(y, _channel_param(ctx, ctx.input(2, "bias"), x.type.shape))]


@converts("LRN")
def convert_lrn(ctx: NodeContext) -> list[Value]:
    """x / (bias + alpha / size * sum of x^2 over `size` neighbouring channels)^beta."""

    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    size = int(ctx.attr("size"))
    alpha, beta = float(ctx.attr("alpha", 1e-4)), float(ctx.attr("beta", 0.75))
    bias = float(ctx.attr("bias", 1.0))
    rank = x.type.rank
    sq = b.multiply(x, x)
    window = tuple(size if d == 1 else 1 for d in range(rank))
    pads = tuple(((size - 1) // 2, size - 1 - (size - 1) // 2) if d == 1 else (0, 0)
                 for d in range(rank))
    total = b.op(ops.reduce_window, [sq, b.constant(np.zeros((), x.type.dtype.numpy))], {
        "window_dimensions": window, "window_strides": (1,) * rank,
        "base_dilations": (1,) * rank, "window_dilations": (1,) * rank, "padding": pads,
        "computation": binary_computation(b.module, ops.add, x.type.dtype)})
    scaled = b.add(b.multiply(total, splat_like(b, alpha / size, total)),
                   splat_like(b, bias, total))
    return [b.divide(x, b.power(scaled, splat_like(b, beta, scaled)))]
