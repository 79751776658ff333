"""Gradient rules of the elementwise ops (unary, binary, select, clamp, convert).

`g` is the cotangent of the result, `x`/`y` the operands and `out` the op's own result,
reused where the derivative is cheapest in terms of it (exp, tanh, logistic, sqrt...).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


@gradient_rule(ops.add)
def _add(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [g, g]


@gradient_rule(ops.subtract)
def _subtract(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [g, ctx.b.negate(g) if ctx.needs(1) else None]


@gradient_rule(ops.multiply)
def _multiply(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    x, y = op.operands
    b = ctx.b
    return [b.multiply(g, y) if ctx.needs(0) else None,
            b.multiply(g, x) if ctx.needs(1) else None]


@gradient_rule(ops.divide)
def _divide(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # d(x/y)/dx = 1/y; d(x/y)/dy = -out/y
    x, y = op.operands
    b = ctx.b
    gx = b.divide(g, y) if ctx.needs(0) or ctx.needs(1) else None
    gy = b.negate(b.multiply(gx, op.result)) if ctx.needs(1) and gx is not None else None
    return [gx if ctx.needs(0) else None, gy]


@gradient_rule(ops.negate)
def _negate(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.negate(g)]


@gradient_rule(ops.copy)
def _copy(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [g]


@gradient_rule(ops.exp)
def _exp(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.multiply(g, op.result)]


@gradient_rule(ops.expm1)
def _expm1(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    b = ctx.b
    return [b.multiply(g, b.add(op.result, ctx.full(1.0, g.type)))]


@gradient_rule(ops.log)
def _log(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.divide(g, op.operands[0])]


@gradient_rule(ops.log1p)
def _log1p(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    b = ctx.b
    return [b.divide(g, b.add(op.operands[0], ctx.full(1.0, g.type)))]


@gradient_rule(ops.tanh)
def _tanh(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # 1 - tanh^2
    b, out = ctx.b, op.result
    return [b.multiply(g, b.subtract(ctx.full(1.0, g.type), b.multiply(out, out)))]


@gradient_rule(ops.logistic)
def _logistic(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # s * (1 - s)
    b, out = ctx.b, op.result
    return [b.multiply(g, b.multiply(out, b.subtract(ctx.full(1.0, g.type), out)))]


@gradient_rule(ops.sqrt)
def _sqrt(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # 1 / (2 sqrt(x))
    b = ctx.b
    return [b.divide(g, b.multiply(ctx.full(2.0, g.type), op.result))]


@gradient_rule(ops.rsqrt)
def _rsqrt(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # -0.5 * rsqrt(x) / x
    b, x = ctx.b, op.operands[0]
    scale = b.divide(b.multiply(op.result, ctx.full(-0.5, g.type)), x)
    return [b.multiply(g, scale)]


@gradient_rule(ops.cbrt)
def _cbrt(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # 1 / (3 cbrt(x)^2)
    b, out = ctx.b, op.result
    return [b.divide(g, b.multiply(ctx.full(3.0, g.type), b.multiply(out, out)))]


@gradient_rule(ops.sin)
def _sin(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.multiply(g, ctx.b.cos(op.operands[0]))]


@gradient_rule(ops.cos)
def _cos(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.negate(ctx.b.multiply(g, ctx.b.sin(op.operands[0])))]


@gradient_rule(ops.erf)
def _erf(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # 2/sqrt(pi) * exp(-x^2)
    b, x = ctx.b, op.operands[0]
    bell = b.exp(b.negate(b.multiply(x, x)))
    return [b.multiply(g, b.multiply(ctx.full(2.0 / math.sqrt(math.pi), g.type), bell))]


@gradient_rule(ops.abs)
def _abs(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.multiply(g, ctx.b.sign(op.operands[0]))]


@gradient_rule(ops.power)
def _power(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    # d x^y / dx = y x^(y-1); d x^y / dy = x^y log(x) (0 where x == 0)
    x, y = op.operands
    b = ctx.b
    gx = gy = None
    if ctx.needs(0):
        ym1 = b.subtract(y, ctx.full(1.0, y.type))
        gx = b.multiply(g, b.multiply(y, b.power(x, ym1)))
    if ctx.needs(1):
        zero = ctx.zeros(x.type)
        is_zero = b.compare(x, zero, direction="EQ")
        safe = b.select(is_zero, ctx.full(1.0, x.type), x)
        gy = b.multiply(g, b.select(is_zero, zero, b.multiply(op.result, b.log(safe))))
    return [gx, gy]


def _chooser(ctx: GradContext, op: Op, g: Value, direction: str) -> Sequence[Value | None]:
    """maximum/minimum: the chosen operand gets g, ties split it in halves."""
    x, y = op.operands
    b = ctx.b
    half = b.multiply(g, ctx.full(0.5, g.type))
    zero = ctx.zeros(g.type)
    wins_x = b.compare(x, y, direction=direction)
    tie = b.compare(x, y, direction="EQ")
    gx = b.select(tie, half, b.select(wins_x, g, zero)) if ctx.needs(0) else None
    gy = b.select(tie, half, b.select(wins_x, zero, g)) if ctx.needs(1) else None
    return [gx, gy]


@gradient_rule(ops.maximum)
def _maximum(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return _chooser(ctx, op, g, "GT")


@gradient_rule(ops.minimum)
def _minimum(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return _chooser(ctx, op, g, "LT")


@gradient_rule(ops.select)
def _select(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    pred, on_true, on_false = op.operands
    b = ctx.b
    zero = ctx.zeros(g.type)
    return [None,
            b.select(pred, g, zero) if ctx.needs(1) else None,
            b.select(pred, zero, g) if ctx.needs(2) else None]


@gradient_rule(ops.clamp)
def _clamp(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """clamp(lo, x, hi): x gets g where lo <= x <= hi (as PyTorch), a bound where it won."""
    lo, x, hi = op.operands
    b = ctx.b
    zero = ctx.zeros(g.type)
    lo_full, hi_full = ctx.like(lo, x.type), ctx.like(hi, x.type)
    below = b.compare(x, lo_full, direction="LT")
    above = b.compare(x, hi_full, direction="GT")
    gx = b.select(below, zero, b.select(above, zero, g)) if ctx.needs(1) else None
    glo = ctx.sum_to(b.select(below, g, zero), lo.type) if ctx.needs(0) else None
    ghi = ctx.sum_to(b.select(above, g, zero), hi.type) if ctx.needs(2) else None
    return [glo, gx, ghi]


@gradient_rule(ops.convert)
def _convert(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    x = op.operands[0]
    if not x.type.dtype.is_float:
        return [None]
    return [ctx.b.convert(g, x.type.dtype)]
