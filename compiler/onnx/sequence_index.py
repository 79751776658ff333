"""Operators that index along a time axis with per-batch runtime offsets: ReverseSequence
and TensorScatter (a KV-cache write), as gathers and scatters of computed indices."""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.gather_scatter import gather_along, scatter_along
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


@converts("ReverseSequence")
def convert_reverse_sequence(ctx: NodeContext) -> list[Value]:
    """out[b, t] = x[b, L_b - 1 - t] for t < L_b (L = sequence_lens), x[b, t] after."""
    b, x, lens = ctx.b, ctx.input(0), ctx.input(1)
    shape = x.type.shape
    batch = ctx.axis(int(ctx.attr("batch_axis", 1)), x.type.rank)
    time = ctx.axis(int(ctx.attr("time_axis", 0)), x.type.rank)
    if batch == time or lens.type.shape != (shape[batch],):
        raise ctx.fail(f"sequence_lens {lens.type} must have one length per batch entry of "
                       f"{x.type} (batch_axis {batch}, time_axis {time})")
    t = b.iota(dtype=DType.S64, shape=shape, dimension=time)
    n = b.op(ops.broadcast_in_dim, [b.convert(lens, DType.S64)],
             {"shape": shape, "broadcast_dimensions": (batch,)})
    rev = b.subtract(b.subtract(n, splat_like(b, 1, n)), t)
    idx = b.select(b.compare(t, n, direction="LT"), rev, t)
    return [gather_along(b, x, idx, time)]


@converts("TensorScatter")
def convert_tensor_scatter(ctx: NodeContext) -> list[Value]:
    """present = past_cache with update[..., s, ...] written at position
    write_indices[batch] + s along `axis` (mod the cache length in circular mode); batch is
    dim 0 and write_indices defaults to zeros."""
    b, past, update = ctx.b, ctx.input(0, "past_cache"), ctx.input(1, "update")
    r = past.type.rank
    axis = ctx.axis(int(ctx.attr("axis", -2)), r)
    mode = ctx.attr("mode", "linear")
    if mode not in ("linear", "circular"):
        raise ctx.fail(f"mode must be linear or circular, got {mode!r}")
    ushape = update.type.shape
    if axis == 0 or any(ushape[d] != past.type.shape[d] for d in range(r) if d != axis):
        raise ctx.fail(f"update {update.type} does not fit past_cache {past.type} along "
                       f"axis {axis}")
    pos = b.iota(dtype=DType.S64, shape=ushape, dimension=axis)
    wi = ctx.optional(2)
    if wi is not None:
        start = b.op(ops.broadcast_in_dim, [b.convert(wi, DType.S64)],
                     {"shape": ushape, "broadcast_dimensions": (0,)})
        pos = b.add(pos, start)
    if mode == "circular":
        pos = b.remainder(pos, splat_like(b, past.type.shape[axis], pos))
    return [scatter_along(b, past, pos, update, axis)]
