"""Gradient rules of reduce_window: sum (average pooling) and max/min (max pooling).

sum: the cotangent dilated by the strides, padded, and summed over the same window (the
transpose of a windowed sum). max/min: select_and_scatter puts each window's cotangent on
the element the window picked (the first maximum, as PyTorch's max-pool; padding is never
picked), which needs unit base and window dilations.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol, attr_ints, attr_ints2, attr_of
from nxcc.ir.computations import binary_computation, compare_computation
from nxcc.ir.core import Op, Value
from nxcc.ir.interpreter import binary_op_of
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


def _dilate(n: int, d: int) -> int:
    return 0 if n == 0 else 1 + d * (n - 1)


def _sum_grad(ctx: GradContext, op: Op, g: Value) -> Value:
    x = op.operands[0]
    a = op.attrs
    rank = x.type.rank
    window, strides = attr_ints(a, "window_dimensions"), attr_ints(a, "window_strides")
    base, dilation = attr_ints(a, "base_dilations"), attr_ints(a, "window_dilations")
    pads = []
    for d in range(rank):
        in_size = _dilate(x.type.shape[d], base[d])
        w_size = _dilate(window[d], dilation[d])
        out_size = _dilate(g.type.shape[d], strides[d])
        before = w_size - attr_ints2(a, "padding")[d][0] - 1
        pads.append((before, in_size + w_size - 1 - out_size - before))
    b = ctx.b
    zero = ctx.scalar(0, g.type.dtype)
    padded = b.pad(g, zero, low=tuple(p[0] for p in pads), high=tuple(p[1] for p in pads),
                   interior=tuple(s - 1 for s in strides))
    return b.op(ops.reduce_window, [padded, zero], {
        "window_dimensions": a["window_dimensions"], "window_strides": a["base_dilations"],
        "base_dilations": (1,) * rank, "window_dilations": a["window_dilations"],
        "padding": ((0, 0),) * rank,
        "computation": binary_computation(b.module, ops.add, g.type.dtype)})


def _chooser_grad(ctx: GradContext, op: Op, g: Value, direction: str) -> Value:
    x = op.operands[0]
    a = op.attrs
    if any(d != 1 for d in (*attr_ints(a, "base_dilations"), *attr_ints(a, "window_dilations"))):
        raise ValueError("gradient of a dilated max/min reduce_window is not supported")
    b = ctx.b
    dtype = x.type.dtype
    return b.op(ops.select_and_scatter, [x, g, ctx.scalar(0, dtype)], {
        "window_dimensions": a["window_dimensions"], "window_strides": a["window_strides"],
        "padding": a["padding"],
        "select": compare_computation(b.module, direction, [dtype]),
        "scatter": binary_computation(b.module, ops.add, dtype)})


@gradient_rule(ops.reduce_window)
def _reduce_window(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    if len(op.operands) != 2:
        raise ValueError("gradient of a variadic reduce_window is not supported")
    sym = attr_of(op.attrs, "computation", Symbol)
    reducer = binary_op_of(ctx.b.module, sym.name)
    if reducer is ops.add:
        return [_sum_grad(ctx, op, g), None]
    if reducer is ops.maximum:
        return [_chooser_grad(ctx, op, g, "GE"), None]
    if reducer is ops.minimum:
        return [_chooser_grad(ctx, op, g, "LE"), None]
    raise ValueError(f"gradient of reduce_window with @{sym.name} is not supported (only "
                     "add, maximum, minimum)")
