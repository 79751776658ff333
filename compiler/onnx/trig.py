"""Inverse trigonometric and hyperbolic operators, from atan2, exp, log and sqrt (Atan is a
core op, in `elementwise.UNARY`).

                                        Sinh(x)  = (expm1(x) - expm1(-x)) / 2
    Asin(x)  = atan2(x, sqrt(1 - x^2))  Cosh(x)  = (exp(x) + exp(-x)) / 2
    Acos(x)  = atan2(sqrt(1 - x^2), x)  Asinh(x) = sign(x) log1p(|x| + x^2 / (1 + sqrt(x^2 + 1)))
    Acosh(x) = log(x + sqrt(x^2 - 1))   Atanh(x) = log1p(2x / (1 - x)) / 2

Out of the domain (|x| > 1 for Asin, x < 1 for Acosh...) the square roots and logs give
NaN, as ONNX specifies.
"""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, float_type_of, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value


def _k(b: Builder, value: float, like: Value) -> Value:
    return splat_like(b, value, like)


def _one_minus_square(b: Builder, x: Value) -> Value:
    """sqrt(1 - x^2), computed as sqrt((1 - x)(1 + x)) for accuracy near |x| = 1."""
    one = _k(b, 1.0, x)
    return b.sqrt(b.multiply(b.subtract(one, x), b.add(one, x)))


@converts("Asin")
def convert_asin(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    return [b.atan2(x, _one_minus_square(b, x))]


@converts("Acos")
def convert_acos(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    return [b.atan2(_one_minus_square(b, x), x)]


@converts("Sinh")
def convert_sinh(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    diff = b.subtract(b.expm1(x), b.expm1(b.negate(x)))
    return [b.multiply(diff, _k(b, 0.5, x))]


@converts("Cosh")
def convert_cosh(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    total = b.add(b.exp(x), b.exp(b.negate(x)))
    return [b.multiply(total, _k(b, 0.5, x))]


@converts("Asinh")
def convert_asinh(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    a = b.abs(x)
    sq = b.multiply(a, a)
    root = b.sqrt(b.add(sq, _k(b, 1.0, x)))
    mag = b.log1p(b.add(a, b.divide(sq, b.add(root, _k(b, 1.0, x)))))
    return [b.multiply(b.sign(x), mag)]


@converts("Acosh")
def convert_acosh(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    one = _k(b, 1.0, x)
    root = b.sqrt(b.multiply(b.subtract(x, one), b.add(x, one)))
    return [b.log(b.add(x, root))]


@converts("Atanh")
def convert_atanh(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    float_type_of(ctx, x)
    ratio = b.divide(b.add(x, x), b.subtract(_k(b, 1.0, x), x))
    return [b.multiply(b.log1p(ratio), _k(b, 0.5, x))]
