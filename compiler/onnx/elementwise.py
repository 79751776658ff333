"""Elementwise arithmetic, math, comparison and logic operators (numpy broadcasting)."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import (
    NodeContext,
    binary,
    broadcast_all,
    compare,
    highest,
    lowest,
    splat_like,
)
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef

#: ONNX op type -> the core op it is, operands broadcast numpy-style.
BINARY: dict[str, OpDef] = {
    "Add": ops.add, "Sub": ops.subtract, "Mul": ops.multiply, "Div": ops.divide,
    "And": ops.and_, "Or": ops.or_, "Xor": ops.xor, "BitwiseAnd": ops.and_,
    "BitwiseOr": ops.or_, "BitwiseXor": ops.xor,
}

#: ONNX op type -> the unary core op it is (one line per op).
UNARY: dict[str, OpDef] = {
    "Neg": ops.negate,
    "Sqrt": ops.sqrt,
    "Exp": ops.exp,
    "Log": ops.log,
    "Erf": ops.erf,
    "Tanh": ops.tanh,
    "Sigmoid": ops.logistic,
    "Floor": ops.floor,
    "Ceil": ops.ceil,
    "Sin": ops.sin,
    "Cos": ops.cos,
    "Tan": ops.tan,
    "Atan": ops.atan,
    "Round": ops.round_even,
    "Not": ops.not_,
    "BitwiseNot": ops.not_,
}

COMPARE = {"Equal": "EQ", "Less": "LT", "Greater": "GT", "LessOrEqual": "LE",
           "GreaterOrEqual": "GE"}


@converts(*BINARY)
def convert_binary(ctx: NodeContext) -> list[Value]:
    return [binary(ctx.b, BINARY[ctx.op_type], ctx.input(0), ctx.input(1), ctx)]


@converts(*UNARY)
def convert_unary(ctx: NodeContext) -> list[Value]:
    return [ctx.b.op(UNARY[ctx.op_type], [ctx.input(0)])]


@converts(*COMPARE)
def convert_compare(ctx: NodeContext) -> list[Value]:
    return [compare(ctx.b, COMPARE[ctx.op_type], ctx.input(0), ctx.input(1), ctx)]


@converts("Abs")
def convert_abs(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [x if x.type.dtype.is_unsigned_int else ctx.b.abs(x)]


@converts("Sign")
def convert_sign(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    if x.type.dtype.is_unsigned_int:  # 1 where x > 0, else 0
        b = ctx.b
        positive = b.compare(x, splat_like(b, 0, x), direction="GT")
        return [b.convert(positive, x.type.dtype)]
    return [ctx.b.sign(x)]


@converts("Reciprocal")
def convert_reciprocal(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.divide(splat_like(ctx.b, 1, x), x)]


@converts("Pow")
def convert_pow(ctx: NodeContext) -> list[Value]:
    """Pow(x, y): y may have another numeric type. An integer x with a float y is computed
    in floating point and truncated back (as onnxruntime); otherwise y converts to x's type."""
    b = ctx.b
    x, y = ctx.input(0), ctx.input(1)
    if not x.type.dtype.is_float and y.type.dtype.is_float:
        wide = DType.F64
        out = binary(b, ops.power, b.convert(x, wide), b.convert(y, wide), ctx)
        return [b.convert(out, x.type.dtype)]
    return [binary(b, ops.power, x, b.convert(y, x.type.dtype), ctx)]


@converts("Mod")
def convert_mod(ctx: NodeContext) -> list[Value]:
    """fmod=1: C fmod (sign of the dividend) = HLO remainder; fmod=0 (integers only): the
    sign of the divisor, as Python's %."""
    b = ctx.b
    x, y = broadcast_all(b, [ctx.input(0), ctx.input(1)], ctx)
    r = b.remainder(x, y)
    if ctx.attr("fmod", 0) or x.type.dtype.is_unsigned_int:
        return [r]
    zero = splat_like(b, 0, r)
    nonzero = b.compare(r, zero, direction="NE")
    differ = b.compare(b.compare(r, zero, direction="LT"), b.compare(y, zero, direction="LT"),
                       direction="NE")
    fix = b.op(ops.and_, [nonzero, differ])
    return [b.select(fix, b.add(r, y), r)]


@converts("IsNaN")
def convert_isnan(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    return [ctx.b.compare(x, x, direction="NE")]


@converts("IsInf")
def convert_isinf(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    pos = b.compare(x, splat_like(b, float("inf"), x), direction="EQ")
    neg = b.compare(x, splat_like(b, float("-inf"), x), direction="EQ")
    if not ctx.attr("detect_positive", 1):
        return [neg]
    if not ctx.attr("detect_negative", 1):
        return [pos]
    return [b.op(ops.or_, [pos, neg])]


def _variadic(ctx: NodeContext, opcode: OpDef) -> Value:
    b = ctx.b
    values = [ctx.input(i) for i in range(len(ctx.inputs))]
    if not values:
        raise ctx.fail("needs at least one input")
    values = broadcast_all(b, values, ctx)
    acc = values[0]
    for v in values[1:]:
        acc = b.op(opcode, [acc, v])
    return acc


@converts("Max")
def convert_max(ctx: NodeContext) -> list[Value]:
    return [_variadic(ctx, ops.maximum)]


@converts("Min")
def convert_min(ctx: NodeContext) -> list[Value]:
    return [_variadic(ctx, ops.minimum)]


@converts("Sum")
def convert_sum(ctx: NodeContext) -> list[Value]:
    return [_variadic(ctx, ops.add)]


@converts("Mean")
def convert_mean(ctx: NodeContext) -> list[Value]:
    total = _variadic(ctx, ops.add)
    return [ctx.b.divide(total, splat_like(ctx.b, len(ctx.inputs), total))]


@converts("Where")
def convert_where(ctx: NodeContext) -> list[Value]:
    cond, x, y = broadcast_all(ctx.b, [ctx.input(0), ctx.input(1), ctx.input(2)], ctx)
    return [ctx.b.select(cond, x, y)]


@converts("Clip")
def convert_clip(ctx: NodeContext) -> list[Value]:
    """Clip: bounds are attributes before opset 11, optional scalar inputs since."""
    b, x = ctx.b, ctx.input(0)
    dtype = x.type.dtype
    if ctx.opset < 11:
        lo = ctx.attr("min", float(np.finfo(np.float32).min))
        hi = ctx.attr("max", float(np.finfo(np.float32).max))
        if lo > lowest(dtype):
            x = b.maximum(x, splat_like(b, lo, x))
        if hi < highest(dtype):
            x = b.minimum(x, splat_like(b, hi, x))
        return [x]
    for i, opcode in ((1, ops.maximum), (2, ops.minimum)):
        bound = ctx.optional(i)
        if bound is None:
            continue
        if bound.type.size != 1:
            raise ctx.fail(f"bound input {i} must be a scalar, got {bound.type}")
        bound = b.reshape(bound, ())
        x = b.op(opcode, [x, b.broadcast_to(bound, x.type.shape)])
    return [x]
