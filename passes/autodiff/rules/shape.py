"""Gradient rules of the data-movement ops: broadcast_in_dim, reshape, transpose, slice, pad,
concatenate, reverse."""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints, attr_of
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


@gradient_rule(ops.broadcast_in_dim)
def _broadcast_in_dim(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """Sum over the new dims and over the operand's size-1 dims that were stretched."""
    x = op.operands[0]
    dims = attr_ints(op.attrs, "broadcast_dimensions")
    shape = attr_ints(op.attrs, "shape")
    stretched = [d for i, d in enumerate(dims) if x.type.shape[i] == 1 and shape[d] != 1]
    summed = [d for d in range(len(shape)) if d not in dims or d in stretched]
    return [ctx.b.reshape(ctx.sum(g, summed), x.type.shape)]


@gradient_rule(ops.reshape)
def _reshape(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.reshape(g, op.operands[0].type.shape)]


@gradient_rule(ops.transpose)
def _transpose(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    perm = attr_ints(op.attrs, "permutation")
    inverse = [0] * len(perm)
    for i, p in enumerate(perm):
        inverse[p] = i
    return [ctx.b.transpose(g, permutation=tuple(inverse))]


@gradient_rule(ops.reverse)
def _reverse(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.reverse(g, dimensions=attr_ints(op.attrs, "dimensions"))]


@gradient_rule(ops.slice)
def _slice(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """The cotangent padded with zeros back to where the slice took it from."""
    x = op.operands[0]
    start, strides = attr_ints(op.attrs, "start_indices"), attr_ints(op.attrs, "strides")
    if g.type.size == 0:
        return [ctx.zeros(x.type)]
    low, high, interior = [], [], []
    for d, n in enumerate(x.type.shape):
        count = g.type.shape[d]
        last = start[d] + (count - 1) * strides[d]
        low.append(start[d])
        high.append(n - last - 1)
        interior.append(strides[d] - 1)
    zero = ctx.scalar(0, g.type.dtype)
    return [ctx.b.pad(g, zero, low=tuple(low), high=tuple(high), interior=tuple(interior))]


@gradient_rule(ops.pad)
def _pad(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """The operand's part of the cotangent (negative padding is cropping: those positions
    get zero); the padding value gets the sum over the rest."""
    x, value = op.operands
    b = ctx.b
    low, high = attr_ints(op.attrs, "low"), attr_ints(op.attrs, "high")
    interior = attr_ints(op.attrs, "interior")
    # undo cropping first: pad the cotangent by what was cropped
    grow_lo = tuple(max(-v, 0) for v in low)
    grow_hi = tuple(max(-v, 0) for v in high)
    full = g
    if any(grow_lo) or any(grow_hi):
        full = b.pad(g, ctx.scalar(0, g.type.dtype), low=grow_lo, high=grow_hi,
                     interior=(0,) * g.type.rank)
    starts = tuple(max(v, 0) for v in low)
    limits = tuple(s + max((n - 1) * (i + 1) + 1, 0) for s, n, i in
                   zip(starts, x.type.shape, interior, strict=True))
    gx = b.slice(full, start_indices=starts, limit_indices=limits,
                 strides=tuple(i + 1 for i in interior))
    gv = None
    if ctx.needs(1):
        total = ctx.sum(g, range(g.type.rank))
        gv = b.subtract(total, ctx.sum(gx, range(gx.type.rank)))
    return [gx if ctx.needs(0) else None, gv]


@gradient_rule(ops.concatenate)
def _concatenate(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    dim = attr_of(op.attrs, "dimension", int)
    out: list[Value | None] = []
    offset = 0
    for i, x in enumerate(op.operands):
        n = x.type.shape[dim]
        if ctx.needs(i):
            start = [0] * g.type.rank
            limit = list(g.type.shape)
            start[dim], limit[dim] = offset, offset + n
            out.append(ctx.b.slice(g, start_indices=tuple(start), limit_indices=tuple(limit),
                                   strides=(1,) * g.type.rank))
        else:
            out.append(None)
        offset += n
    return out
