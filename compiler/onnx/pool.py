"""Pooling: MaxPool, AveragePool, LpPool as ``reduce_window``; global pools as ``reduce``."""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, lowest, reduce, splat_like
from nxcc.compiler.onnx.nn import Window, window
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef


def _output_size(geom: Window, i: int, size: int, ceil_mode: bool) -> int:
    """Pooled length along spatial dim `i` (ceil_mode: the last window must start inside
    the input or its leading padding, as PyTorch and onnxruntime have it)."""
    lo, hi = geom.pads[i]
    span = size + lo + hi - geom.extent(i)
    if span < 0:
        return 0
    stride = geom.strides[i]
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + lo:
        out -= 1
    return out


def pool_window(ctx: NodeContext, x: Value) -> tuple[Window, list[int]]:
    """The pool's window and output spatial sizes (pads extended for ceil_mode)."""
    if x.type.rank < 3:
        raise ctx.fail(f"input must be N x C x D1 x ..., got {x.type}")
    kernel = ctx.attr("kernel_shape")
    if kernel is None:
        raise ctx.fail("needs attribute 'kernel_shape'")
    spatial = x.type.shape[2:]
    geom = window(ctx, spatial, [int(k) for k in kernel])
    ceil_mode = bool(ctx.attr("ceil_mode", 0))
    sizes = [_output_size(geom, i, s, ceil_mode) for i, s in enumerate(spatial)]
    return geom, sizes


def _reduce_window(b: Builder, x: Value, geom: Window, sizes: list[int], opcode: OpDef,
                   init: float | int) -> Value:
    """`opcode` over each window; the end padding grows so the output has `sizes`."""
    pads = []
    for i, size in enumerate(x.type.shape[2:]):
        lo, hi = geom.pads[i]
        if sizes[i] and _output_size(geom, i, size, False) != sizes[i]:
            hi = (sizes[i] - 1) * geom.strides[i] + geom.extent(i) - (size + lo)
        pads.append((lo, hi))
    dtype = x.type.dtype
    return b.op(ops.reduce_window, [x, b.constant(np.array(init, dtype=dtype.numpy))], {
        "window_dimensions": (1, 1, *geom.kernel),
        "window_strides": (1, 1, *geom.strides),
        "base_dilations": (1,) * x.type.rank,
        "window_dilations": (1, 1, *geom.dilations),
        "padding": ((0, 0), (0, 0), *pads),
        "computation": binary_computation(b.module, opcode, dtype),
    })


@converts("MaxPool")
def convert_max_pool(ctx: NodeContext) -> list[Value]:
    """MaxPool, and its optional Indices output (see `max_indices`)."""
    x = ctx.input(0)
    if ctx.attr("storage_order", 0) not in (0, 1):
        raise ctx.fail("storage_order must be 0 or 1")
    geom, sizes = pool_window(ctx, x)
    y = _reduce_window(ctx.b, x, geom, sizes, ops.maximum, lowest(x.type.dtype))
    if not ctx.output_used(1):
        return [y]
    return [y, max_indices(ctx.b, x, y, geom, int(ctx.attr("storage_order", 0)))]


def max_indices(b: Builder, x: Value, y: Value, geom: Window, storage_order: int) -> Value:
    """The s64 flat index into `x` of the first maximum of each window: the kernel's
    offsets are visited in order (one strided slice of the padded input each) and the
    first whose value equals the window's max wins. Indices count N, C and the spatial
    dims row-major, or the spatial dims column-major when `storage_order` is 1."""
    shape, out = x.type.shape, y.type.shape
    rank = len(shape)
    spatial = shape[2:]
    pads = [(lo, (o - 1) * st + geom.extent(i) - (n + lo))
            for i, ((lo, _hi), n, o, st) in enumerate(zip(geom.pads, spatial, out[2:],
                                                        geom.strides, strict=True))]
    xp = b.pad(x, b.constant(np.array(lowest(x.type.dtype), x.type.dtype.numpy)),
               low=(0, 0, *[max(p[0], 0) for p in pads]),
               high=(0, 0, *[max(p[1], 0) for p in pads]), interior=(0,) * rank)
    plane = math.prod(spatial)
    batch = b.iota(dtype=DType.S64, shape=out, dimension=0)
    channel = b.add(b.multiply(batch, b.splat(shape[1], batch.type)),
                    b.iota(dtype=DType.S64, shape=out, dimension=1))
    base = b.multiply(channel, b.splat(plane, channel.type))
    weights = [math.prod(spatial[i + 1:]) for i in range(len(spatial))]
    if storage_order == 1:
        weights = [math.prod(spatial[:i]) for i in range(len(spatial))]
    found = b.splat(False, y.type.with_dtype(DType.PRED))
    index = b.splat(0, channel.type)
    for offset in np.ndindex(*geom.kernel):
        starts = [max(p[0], 0) - p[0] + k * d for p, k, d in
                  zip(pads, offset, geom.dilations, strict=True)]
        window_vals = b.slice(xp, start_indices=(0, 0, *starts),
                              limit_indices=(out[0], out[1], *[
                                  s + (o - 1) * st + 1 for s, o, st in
                                  zip(starts, out[2:], geom.strides, strict=True)]),
                              strides=(1, 1, *geom.strides))
        flat = base
        for i, (st, w) in enumerate(zip(geom.strides, weights, strict=True)):
            first = offset[i] * geom.dilations[i] - pads[i][0]
            pos = b.iota(dtype=DType.S64, shape=out, dimension=2 + i)
            pos = b.add(b.multiply(pos, b.splat(st, pos.type)), b.splat(first, pos.type))
            flat = b.add(flat, b.multiply(pos, b.splat(w, pos.type)))
        hit = b.op(ops.and_, [b.compare(window_vals, y, direction="EQ"), b.op(ops.not_, [found])])
        index = b.select(hit, flat, index)
        found = b.op(ops.or_, [found, hit])
    return index


def _window_counts(geom: Window, i: int, size: int, out: int, include_pad: bool) -> np.ndarray:
    """How many elements each of the `out` windows along spatial dim `i` averages: the
    input ones, plus the explicit padding ones when `include_pad` (never the extra end
    padding ceil_mode adds)."""
    lo, hi = geom.pads[i]
    start = np.arange(out)[:, None] * geom.strides[i] - lo
    pos = start + np.arange(geom.kernel[i])[None, :] * geom.dilations[i]
    limit_lo, limit_hi = (-lo, size + hi) if include_pad else (0, size)
    return ((pos >= limit_lo) & (pos < limit_hi)).sum(axis=1)


@converts("AveragePool")
def convert_average_pool(ctx: NodeContext) -> list[Value]:
    """Window sums divided by the per-window element counts (a compile-time constant)."""
    b, x = ctx.b, ctx.input(0)
    if not x.type.dtype.is_float:
        raise ctx.fail(f"expects a floating-point input, got {x.type}")
    geom, sizes = pool_window(ctx, x)
    total = _reduce_window(b, x, geom, sizes, ops.add, 0)
    include = bool(ctx.attr("count_include_pad", 0))
    counts = np.ones((), dtype=np.float64)
    for i, size in enumerate(x.type.shape[2:]):
        counts = np.multiply.outer(counts, _window_counts(geom, i, size, sizes[i], include))
    counts = np.maximum(counts, 1)  # an empty window sums to 0: keep 0, not NaN
    if counts.size and np.all(counts == counts.reshape(-1)[0]):
        divisor = splat_like(b, float(counts.reshape(-1)[0]), total)
    else:
        const = b.constant(counts.astype(x.type.dtype.numpy))
        rank = x.type.rank
        divisor = b.op(ops.broadcast_in_dim, [const], {
            "shape": total.type.shape, "broadcast_dimensions": tuple(range(2, rank))})
    return [b.divide(total, divisor)]


@converts("LpPool")
def convert_lp_pool(ctx: NodeContext) -> list[Value]:
    """(sum over the window of |x|^p)^(1/p); padding counts as zeros."""
    b, x = ctx.b, ctx.input(0)
    p = float(ctx.attr("p", 2))
    geom, sizes = pool_window(ctx, x)
    total = _reduce_window(b, _abs_pow(b, x, p), geom, sizes, ops.add, 0)
    return [_root(b, total, p)]


def _abs_pow(b: Builder, x: Value, p: float) -> Value:
    if p == 2.0:
        return b.multiply(x, x)
    ax = b.abs(x)
    return ax if p == 1.0 else b.power(ax, splat_like(b, p, ax))


def _root(b: Builder, x: Value, p: float) -> Value:
    if p == 2.0:
        return b.sqrt(x)
    return x if p == 1.0 else b.power(x, splat_like(b, 1.0 / p, x))


def _global(ctx: NodeContext) -> tuple[Value, list[int]]:
    x = ctx.input(0)
    if x.type.rank < 3:
        raise ctx.fail(f"input must be N x C x D1 x ..., got {x.type}")
    return x, list(range(2, x.type.rank))


@converts("GlobalAveragePool")
def convert_global_average_pool(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, dims = _global(ctx)
    total = reduce(b, x, dims, ops.add, keepdims=True)
    count = math.prod(x.type.shape[2:])
    return [b.divide(total, splat_like(b, max(count, 1), total))]


@converts("GlobalMaxPool")
def convert_global_max_pool(ctx: NodeContext) -> list[Value]:
    x, dims = _global(ctx)
    return [reduce(ctx.b, x, dims, ops.maximum, keepdims=True)]


@converts("GlobalLpPool")
def convert_global_lp_pool(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, dims = _global(ctx)
    p = float(ctx.attr("p", 2))
    return [_root(b, reduce(b, _abs_pow(b, x, p), dims, ops.add, keepdims=True), p)]
