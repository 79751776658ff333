"""RoiAlign: bilinear samples on a regular grid inside each bin of each region, averaged
(or maxed), as gathers from the flattened input.

The sample coordinates are computed from the (runtime) rois with elementwise ops, per the
ONNX reference: a sample beyond [-1, size] contributes 0; one in the last row/column is
clamped onto it; "half_pixel" shifts coordinates by -0.5, "output_half_pixel" forces
regions to at least 1x1. The grid is sampling_ratio x sampling_ratio; sampling_ratio 0
(adaptive: ceil(region / output) per region) needs the rois at compile time.
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, float_type_of, reduce, splat_like
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


def _k(b: Builder, v: float, like: Value) -> Value:
    return splat_like(b, v, like)


def _axis_samples(b: Builder, start: Value, size: Value, pooled: int, grid: int, limit: int
                  ) -> tuple[Value, Value, Value, Value, Value]:
    """Along one axis, for rois [R] starting at `start` of extent `size`: the sample
    positions' (valid, low index, high index, low weight, high weight), each [R, pooled,
    grid] (indices s64)."""
    shape = (start.type.shape[0], pooled, grid)
    f32 = start.type.with_shape(shape)

    def per_roi(v: Value) -> Value:
        return b.op(ops.broadcast_in_dim, [v], {"shape": shape, "broadcast_dimensions": (0,)})

    binsz = b.divide(per_roi(size), b.splat(float(pooled), f32))
    p = b.convert(b.iota(dtype=DType.S64, shape=shape, dimension=1), DType.F32)
    g = b.convert(b.iota(dtype=DType.S64, shape=shape, dimension=2), DType.F32)
    pos = b.add(per_roi(start), b.add(b.multiply(p, binsz), b.divide(
        b.multiply(b.add(g, _k(b, 0.5, g)), binsz), b.splat(float(grid), f32))))
    valid = b.op(ops.and_, [b.compare(pos, _k(b, -1.0, pos), direction="GE"),
                         b.compare(pos, _k(b, float(limit), pos), direction="LE")])
    pos = b.maximum(pos, _k(b, 0.0, pos))
    low = b.floor(pos)
    last = b.compare(low, _k(b, limit - 1.0, low), direction="GE")
    low = b.select(last, _k(b, limit - 1.0, low), low)
    pos = b.select(last, low, pos)
    high = b.select(last, low, b.add(low, _k(b, 1.0, low)))
    frac = b.subtract(pos, low)
    return (valid, b.convert(low, DType.S64), b.convert(high, DType.S64),
            b.subtract(_k(b, 1.0, frac), frac), frac)


def roi_align(ctx: NodeContext, x: Value, rois: Value, batch: Value, grid_h: int,
              grid_w: int) -> Value:
    """The pooled features [R, C, oh, ow] of the R regions `rois` [R, 4]."""
    b = ctx.b
    n, c, h, w = x.type.shape
    oh, ow = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    scale = float(ctx.attr("spatial_scale", 1.0))
    half = ctx.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    mode = ctx.attr("mode", "avg")
    r = rois.type.shape[0]
    f = b.convert(rois, DType.F32)

    def coord(i: int) -> Value:
        v = b.reshape(b.slice(f, start_indices=(0, i), limit_indices=(r, i + 1),
                              strides=(1, 1)), (r,))
        v = b.multiply(v, _k(b, scale, v))
        return b.subtract(v, _k(b, 0.5, v)) if half else v

    x0, y0, x1, y1 = (coord(i) for i in range(4))
    rw, rh = b.subtract(x1, x0), b.subtract(y1, y0)
    if not half:
        rw, rh = b.maximum(rw, _k(b, 1.0, rw)), b.maximum(rh, _k(b, 1.0, rh))
    ys = _axis_samples(b, y0, rh, oh, grid_h, h)
    xs = _axis_samples(b, x0, rw, ow, grid_w, w)
    full = (r, c, oh, grid_h, ow, grid_w)

    def along_y(v: Value) -> Value:
        return b.op(ops.broadcast_in_dim, [v], {"shape": full, "broadcast_dimensions": (0, 2, 3)})

    def along_x(v: Value) -> Value:
        return b.op(ops.broadcast_in_dim, [v], {"shape": full, "broadcast_dimensions": (0, 4, 5)})

    chan = b.add(b.multiply(b.op(ops.broadcast_in_dim, [b.convert(batch, DType.S64)], {
        "shape": full, "broadcast_dimensions": (0,)}), b.splat(c, _s64(full))),
        b.iota(dtype=DType.S64, shape=full, dimension=1))
    base = b.multiply(chan, b.splat(h * w, chan.type))
    valid = b.op(ops.and_, [along_y(ys[0]), along_x(xs[0])])
    flat_x = b.convert(b.reshape(x, (x.type.size,)), DType.F32)
    corners = []
    for yi, yw in ((1, 3), (2, 4)):
        for xi, xw in ((1, 3), (2, 4)):
            idx = b.add(base, b.add(b.multiply(along_y(ys[yi]), b.splat(w, _s64(full))),
                                    along_x(xs[xi])))
            weight = b.multiply(along_y(ys[yw]), along_x(xs[xw]))
            corners.append(b.multiply(weight, take(b, flat_x, idx, 0)))
    zero = b.splat(0.0, corners[0].type)
    if mode == "avg":
        total = b.add(b.add(corners[0], corners[1]), b.add(corners[2], corners[3]))
        total = b.select(valid, total, zero)
        out = reduce(b, total, [3, 5], ops.add)
        out = b.divide(out, b.splat(float(max(grid_h * grid_w, 1)), out.type))
    elif mode == "max":
        best = b.maximum(b.maximum(corners[0], corners[1]), b.maximum(corners[2], corners[3]))
        out = reduce(b, b.select(valid, best, zero), [3, 5], ops.maximum)
    else:
        raise ctx.fail(f"mode must be avg or max, got {mode!r}")
    return b.convert(out, x.type.dtype)


def _s64(shape: tuple[int, ...]) -> TensorType:
    return TensorType(DType.S64, shape)


@converts("RoiAlign")
def convert_roi_align(ctx: NodeContext) -> list[Value]:
    b = ctx.b
    x, rois, batch = ctx.input(0, "X"), ctx.input(1, "rois"), ctx.input(2, "batch_indices")
    float_type_of(ctx, x)
    if x.type.rank != 4 or rois.type.rank != 2 or rois.type.shape[1] != 4:
        raise ctx.fail(f"expects X [N, C, H, W] and rois [R, 4], got {x.type} and {rois.type}")
    ratio = int(ctx.attr("sampling_ratio", 0))
    if ratio > 0:
        return [roi_align(ctx, x, rois, batch, ratio, ratio)]
    # adaptive grids: per region, from its (compile-time) size
    boxes = ctx.const_input(1, "rois").astype(np.float64)
    scale = float(ctx.attr("spatial_scale", 1.0))
    half = ctx.attr("coordinate_transformation_mode", "half_pixel") == "half_pixel"
    oh, ow = int(ctx.attr("output_height", 1)), int(ctx.attr("output_width", 1))
    parts = []
    for i, box in enumerate(boxes):
        rw, rh = (box[2] - box[0]) * scale, (box[3] - box[1]) * scale
        if not half:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh, gw = max(math.ceil(rh / oh), 1), max(math.ceil(rw / ow), 1)
        one = b.slice(rois, start_indices=(i, 0), limit_indices=(i + 1, 4), strides=(1, 1))
        idx = b.slice(batch, start_indices=(i,), limit_indices=(i + 1,), strides=(1,))
        parts.append(roi_align(ctx, x, one, idx, gh, gw))
    return [parts[0] if len(parts) == 1 else b.concatenate(*parts, dimension=0)]
