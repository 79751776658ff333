"""Gradient rules of reduce (sum, max, min over one input)."""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol, attr_ints, attr_of
from nxcc.ir.core import Op, Value
from nxcc.ir.interpreter import binary_op_of
from nxcc.ir.opdef import OpDef
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


def reducer_op(ctx: GradContext, op: Op) -> OpDef | None:
    sym = attr_of(op.attrs, "computation", Symbol)
    return binary_op_of(ctx.b.module, sym.name)


@gradient_rule(ops.reduce)
def _reduce(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """sum: the cotangent broadcast back; max/min: to the elements equal to the result,
    ties sharing it equally (as PyTorch's amax/amin)."""
    if len(op.operands) != 2:
        raise ValueError("gradient of a variadic reduce is not supported")
    x, init = op.operands
    reducer = reducer_op(ctx, op)
    dims = attr_ints(op.attrs, "dimensions")
    kept = [d for d in range(x.type.rank) if d not in dims]
    b = ctx.b
    spread = ctx.broadcast(g, x.type.shape, kept)
    if reducer is ops.add:
        gi = ctx.sum(g, range(g.type.rank)) if ctx.needs(1) else None
        return [spread, gi]
    if reducer in (ops.maximum, ops.minimum):
        out = ctx.broadcast(op.result, x.type.shape, kept)
        hit = b.convert(b.compare(x, out, direction="EQ"), x.type.dtype)
        count = ctx.broadcast(ctx.sum(hit, dims), x.type.shape, kept)
        gx = b.divide(b.multiply(spread, hit), count)
        return [gx, None]
    raise ValueError(f"gradient of reduce with @{op.attrs['computation']} is not supported "
                     "(only add, maximum, minimum)")
