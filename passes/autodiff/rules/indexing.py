"""Gradient rules of the indexing ops: dynamic_slice, dynamic_update_slice, gather.

Start indices are clamped the same way by dynamic_slice and dynamic_update_slice, so the
cotangent goes back exactly where the slice came from. gather's gradient is a scatter-add
with the same dimension numbers (in-range indices; gather clamps out-of-range starts where
scatter skips them, as in XLA).
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


@gradient_rule(ops.dynamic_slice)
def _dynamic_slice(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    x, starts = op.operands[0], op.operands[1:]
    gx = ctx.b.op(ops.dynamic_update_slice, [ctx.zeros(x.type), g, *starts])
    return [gx, *([None] * len(starts))]


@gradient_rule(ops.dynamic_update_slice)
def _dynamic_update_slice(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    update, starts = op.operands[1], op.operands[2:]
    b = ctx.b
    gx = b.op(ops.dynamic_update_slice, [g, ctx.zeros(update.type), *starts]) \
        if ctx.needs(0) else None
    gu = b.op(ops.dynamic_slice, [g, *starts], {"slice_sizes": update.type.shape}) \
        if ctx.needs(1) else None
    return [gx, gu, *([None] * len(starts))]


@gradient_rule(ops.gather)
def _gather(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    x, indices = op.operands
    a = op.attrs
    dtype = x.type.dtype
    gx = ctx.b.op(ops.scatter, [ctx.zeros(x.type), indices, g], {
        "update_window_dims": a["offset_dims"],
        "inserted_window_dims": a["collapsed_slice_dims"],
        "input_batching_dims": a["operand_batching_dims"],
        "scatter_indices_batching_dims": a["start_indices_batching_dims"],
        "scatter_dims_to_operand_dims": a["start_index_map"],
        "index_vector_dim": a["index_vector_dim"],
        "computation": binary_computation(ctx.b.module, ops.add, dtype),
        "indices_are_sorted": a["indices_are_sorted"],
    })
    return [gx, None]
