"""Quantization operators: QuantizeLinear, DequantizeLinear, and the integer and
quantized-linear MatMul and Conv (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv).

Scales and zero points are per tensor (a scalar or one element), per axis (1-D along
`axis`) or blocked (`block_size` consecutive elements along `axis` share one), as
`onnx.reference.ops._quant_utils.reshape_input` expands them.

    QuantizeLinear:   y = saturate(round_half_even(x / scale) + zero_point)   (integers)
                      y = saturating cast of x / scale                        (float8)
                      y = cast of x / scale + zero_point                      (float4)
    DequantizeLinear: y = (float32(x) - zero_point) * scale, cast to the scale's type
                      (or output_dtype)
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from nxcc.compiler.onnx.cast import SATURATING_F8, saturate_to
from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.linalg import matmul
from nxcc.compiler.onnx.nn import conv
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


def expand_param(ctx: NodeContext, v: Value, shape: tuple[int, ...], axis: int,
                 block_size: int = 0) -> Value:
    """Scale or zero point `v` broadcast to `shape`: per tensor, per `axis`, or blocked."""
    b = ctx.b
    if v.type.rank == 0 or v.type.size == 1:
        return b.broadcast_to(b.reshape(v, ()), shape)
    axis = ctx.axis(axis, len(shape))
    if not block_size:
        if v.type.rank != 1 or v.type.shape[0] != shape[axis]:
            raise ctx.fail(f"per-axis parameter {v.type} must have {shape[axis]} elements")
        return b.op(ops.broadcast_in_dim, [v], {"shape": shape, "broadcast_dimensions": (axis,)})
    blocks = v.type.shape[axis] if v.type.rank == len(shape) else -1
    if blocks != math.ceil(shape[axis] / block_size):
        raise ctx.fail(f"blocked parameter {v.type} does not fit {list(shape)} with "
                       f"block_size {block_size} along axis {axis}")
    wide = [*v.type.shape[:axis + 1], block_size, *v.type.shape[axis + 1:]]
    dims = tuple(d if d <= axis else d + 1 for d in range(v.type.rank))
    rep = b.op(ops.broadcast_in_dim, [v], {"shape": tuple(wide), "broadcast_dimensions": dims})
    rep = b.reshape(rep, [*v.type.shape[:axis], blocks * block_size, *v.type.shape[axis + 1:]])
    if blocks * block_size != shape[axis]:
        rank = len(shape)
        rep = b.slice(rep, start_indices=(0,) * rank, limit_indices=tuple(shape),
                      strides=(1,) * rank)
    return rep


def _integer_range(dtype: DType) -> tuple[int, int]:
    info = ml_dtypes.iinfo(dtype.numpy) if dtype.is_narrow else np.iinfo(dtype.numpy)
    return int(info.min), int(info.max)


def quantize(ctx: NodeContext, scaled: Value, zero_point: Value | None, to: DType,
             saturate: bool = True) -> Value:
    """`scaled` (x / scale, a float) quantized to `to` with `zero_point` (broadcast)."""
    b = ctx.b
    if to.is_integer:
        r = b.convert(b.round_even(scaled), DType.S32)
        if zero_point is not None:
            r = b.add(r, b.convert(zero_point, DType.S32))
        lo, hi = _integer_range(to)
        r = b.clamp(splat_like(b, lo, r), r, splat_like(b, hi, r))
        return b.convert(r, to)
    if to in SATURATING_F8:
        return saturate_to(b, scaled, to) if saturate else b.convert(scaled, to)
    if to is DType.F4E2M1FN:
        if zero_point is not None:
            scaled = b.add(scaled, b.convert(zero_point, scaled.type.dtype))
        return b.convert(scaled, to)
    raise ctx.fail(f"cannot quantize to {to}")


@converts("QuantizeLinear")
def convert_quantize_linear(ctx: NodeContext) -> list[Value]:
    b, x, scale = ctx.b, ctx.input(0, "x"), ctx.input(1, "y_scale")
    zp = ctx.optional(2)
    axis, block = int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0))
    to = (zp.type.dtype if zp is not None else
          to_ir_dtype(int(ctx.attr("output_dtype", 0)) or 2, "QuantizeLinear output"))
    shape = x.type.shape
    precision = int(ctx.attr("precision", 0))
    dtype = to_ir_dtype(precision, "precision") if precision else x.type.dtype
    s = b.convert(expand_param(ctx, scale, shape, axis, block), dtype)
    scaled = b.divide(b.convert(x, dtype), s)
    z = None if zp is None or to in SATURATING_F8 else expand_param(ctx, zp, shape, axis, block)
    return [quantize(ctx, scaled, z, to, bool(ctx.attr("saturate", 1)))]


@converts("DequantizeLinear")
def convert_dequantize_linear(ctx: NodeContext) -> list[Value]:
    b, x, scale = ctx.b, ctx.input(0, "x"), ctx.input(1, "x_scale")
    zp = ctx.optional(2)
    axis, block = int(ctx.attr("axis", 1)), int(ctx.attr("block_size", 0))
    shape = x.type.shape
    out = int(ctx.attr("output_dtype", 0))
    to = to_ir_dtype(out, "output_dtype") if out else scale.type.dtype
    dx = b.convert(x, DType.F32)
    if zp is not None and x.type.dtype not in SATURATING_F8 | {DType.F4E2M1FN}:
        dx = b.subtract(dx, b.convert(expand_param(ctx, zp, shape, axis, block), DType.F32))
    y = b.multiply(dx, b.convert(expand_param(ctx, scale, shape, axis, block), DType.F32))
    return [b.convert(y, to)]


def _centered(b: Builder, x: Value, zero_point: Value | None,
              shape_of_zp: tuple[int, ...] | None = None) -> Value:
    """int32(x) - int32(zero_point), the zero point reshaped to `shape_of_zp` (when given)
    and broadcast numpy-style."""
    xi = b.convert(x, DType.S32)
    if zero_point is None:
        return xi
    z = b.convert(zero_point, DType.S32)
    if shape_of_zp is not None:
        z = b.reshape(z, shape_of_zp)
    return b.subtract(xi, b.broadcast_to(z, xi.type.shape))


@converts("MatMulInteger")
def convert_matmul_integer(ctx: NodeContext) -> list[Value]:
    """int32 (A - a_zero_point) @ (B - b_zero_point); a 1-D a_zero_point is per row of A,
    a 1-D b_zero_point per column of B."""
    b = ctx.b
    a, w = ctx.input(0, "A"), ctx.input(1, "B")
    azp, bzp = ctx.optional(2), ctx.optional(3)
    per_row = azp is not None and azp.type.rank == 1 and azp.type.size > 1
    ai = _centered(b, a, azp, (azp.type.size, 1) if per_row else None)  # type: ignore[union-attr]
    wi = _centered(b, w, bzp)
    return [matmul(ctx, ai, wi)]


@converts("ConvInteger")
def convert_conv_integer(ctx: NodeContext) -> list[Value]:
    """int32 convolution of (x - x_zero_point) by (w - w_zero_point), the latter per output
    channel when 1-D."""
    b = ctx.b
    x, w = ctx.input(0, "x"), ctx.input(1, "w")
    xzp, wzp = ctx.optional(2), ctx.optional(3)
    xi = _centered(b, x, xzp, None if xzp is None else ())
    wshape = None
    if wzp is not None:
        wshape = (w.type.shape[0], *(1,) * (w.type.rank - 1)) if wzp.type.size > 1 else ()
    return [conv(ctx, xi, _centered(b, w, wzp, wshape))]


def _requantize(ctx: NodeContext, acc: Value, scale: Value, y_scale: Value,
                y_zp: Value | None, fallback: DType) -> Value:
    """int32 accumulator `acc` * (scale / y_scale), rounded and shifted into y's type."""
    b = ctx.b
    f = b.convert(acc, DType.F32)
    scaled = b.multiply(f, b.divide(scale, b.broadcast_to(
        b.reshape(b.convert(y_scale, DType.F32), ()), scale.type.shape)))
    to = y_zp.type.dtype if y_zp is not None else fallback
    z = None if y_zp is None else b.broadcast_to(b.reshape(y_zp, ()), f.type.shape)
    return quantize(ctx, scaled, z, to)


@converts("QLinearMatMul")
def convert_qlinear_matmul(ctx: NodeContext) -> list[Value]:
    """QLinearMatMul(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp): the int32 product
    of the centered operands, requantized with a_scale * b_scale / y_scale."""
    b = ctx.b
    a, w = ctx.input(0, "a"), ctx.input(3, "b")
    acc = matmul(ctx, _centered(b, a, ctx.optional(2)), _centered(b, w, ctx.optional(5)))
    scale = b.multiply(b.convert(ctx.input(1, "a_scale"), DType.F32),
                       b.convert(ctx.input(4, "b_scale"), DType.F32))
    scale = b.broadcast_to(scale, acc.type.shape)
    return [_requantize(ctx, acc, scale, ctx.input(6, "y_scale"), ctx.optional(7),
                        a.type.dtype)]


@converts("QLinearConv")
def convert_qlinear_conv(ctx: NodeContext) -> list[Value]:
    """QLinearConv(x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B): the int32
    convolution (+ int32 bias), requantized with x_scale * w_scale / y_scale (w_scale per
    output channel when 1-D)."""
    b = ctx.b
    x, w = ctx.input(0, "x"), ctx.input(3, "w")
    wzp = ctx.optional(5)
    wshape = None
    if wzp is not None:
        wshape = (w.type.shape[0], *(1,) * (w.type.rank - 1)) if wzp.type.size > 1 else ()
    acc = conv(ctx, _centered(b, x, ctx.optional(2), ()), _centered(b, w, wzp, wshape))
    bias = ctx.optional(8)
    if bias is not None:
        acc = b.add(acc, b.op(ops.broadcast_in_dim, [b.convert(bias, DType.S32)], {
            "shape": acc.type.shape, "broadcast_dimensions": (1,)}))
    w_scale = b.convert(ctx.input(4, "w_scale"), DType.F32)
    if w_scale.type.size > 1:
        w_scale = b.op(ops.broadcast_in_dim, [b.reshape(w_scale, (w_scale.type.size,))], {
            "shape": acc.type.shape, "broadcast_dimensions": (1,)})
    else:
        w_scale = b.broadcast_to(b.reshape(w_scale, ()), acc.type.shape)
    x_scale = b.broadcast_to(b.reshape(b.convert(ctx.input(1, "x_scale"), DType.F32), ()),
                             acc.type.shape)
    return [_requantize(ctx, acc, b.multiply(x_scale, w_scale), ctx.input(6, "y_scale"),
                        ctx.optional(7), x.type.dtype)]
