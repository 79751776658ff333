"""GatherElements, GatherND, ScatterElements, ScatterND and OneHot as core gather, scatter
and compare/select ops."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Function, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType

REDUCTIONS = {"add": ops.add, "mul": ops.multiply, "max": ops.maximum, "min": ops.minimum}


def index_vectors(ctx: NodeContext, i: int, limits: list[int]) -> Value:
    """Input `i` as s64, negatives counted from the end of `limits` (one limit per entry of
    the last dim, or one for all when `limits` has one entry)."""
    b, v = ctx.b, ctx.input(i)
    if not v.type.dtype.is_integer:
        raise ctx.fail(f"indices must be integers, got {v.type}")
    lim = np.array(limits, np.int64)
    known = ctx.const(i)
    if known is not None:
        k = np.asarray(known).astype(np.int64)
        if np.any((k < -lim) | (k >= lim)):
            raise ctx.fail(f"indices out of range for sizes {limits}")
        return b.constant(np.where(k < 0, k + lim, k))
    v = b.convert(v, DType.S64)
    zero = splat_like(b, 0, v)
    shift = b.broadcast_to(b.constant(lim), v.type.shape) if lim.size > 1 else splat_like(
        b, int(lim[0]), v)
    return b.add(v, b.select(b.compare(v, zero, direction="LT"), shift, zero))


def _coordinates(b: Builder, idx: Value, axis: int) -> Value:
    """[*idx.shape, rank]: each position's own coordinates with `axis` replaced by idx."""
    shape, r = idx.type.shape, idx.type.rank
    coords = [b.reshape(idx if d == axis else b.iota(dtype=DType.S64, shape=shape,
                                                         dimension=d), (*shape, 1))
              for d in range(r)]
    return b.concatenate(*coords, dimension=r) if r > 1 else coords[0]


@converts("GatherElements")
def convert_gather_elements(ctx: NodeContext) -> list[Value]:
    """out[i...] = data[i...] with dim `axis` replaced by indices[i...]."""
    b, data, indices = ctx.b, ctx.input(0), ctx.input(1)
    r = data.type.rank
    axis = ctx.axis(int(ctx.attr("axis", 0)), r)
    if indices.type.rank != r:
        raise ctx.fail(f"indices {indices.type} must have the rank of {data.type}")
    return [gather_along(b, data, index_vectors(ctx, 1, [data.type.shape[axis]]), axis)]


def gather_along(b: Builder, data: Value, idx: Value, axis: int) -> Value:
    """out[i...] = data[i...] with dim `axis` replaced by s64 `idx[i...]` (in range)."""
    r = data.type.rank
    full = _coordinates(b, idx, axis)
    return b.gather(data, full, offset_dims=(), collapsed_slice_dims=tuple(range(r)),
                    start_index_map=tuple(range(r)), index_vector_dim=r,
                    slice_sizes=(1,) * r)


def scatter_along(b: Builder, data: Value, idx: Value, updates: Value, axis: int) -> Value:
    """`data` with out[i... (axis: idx[i...])] = updates[i...] (s64 `idx` in range)."""
    r = data.type.rank
    full = _coordinates(b, idx, axis)
    return b.scatter(data, full, updates, update_window_dims=(),
                     inserted_window_dims=tuple(range(r)),
                     scatter_dims_to_operand_dims=tuple(range(r)), index_vector_dim=r,
                     computation=replace_computation(b, data.type.dtype))


def _nd_dims(ctx: NodeContext, data: Value, indices: Value) -> tuple[int, int]:
    """(batch_dims, index depth k) of a GatherND/ScatterND."""
    bd = int(ctx.attr("batch_dims", 0))
    if indices.type.rank < 1:
        raise ctx.fail(f"indices must have rank >= 1, got {indices.type}")
    k = indices.type.shape[-1]
    if bd + k > data.type.rank or data.type.shape[:bd] != indices.type.shape[:bd]:
        raise ctx.fail(f"indices {indices.type} do not fit data {data.type} "
                       f"with batch_dims {bd}")
    return bd, k


@converts("GatherND")
def convert_gather_nd(ctx: NodeContext) -> list[Value]:
    """out = indices.shape[:-1] + data.shape[batch_dims + k:], k = indices.shape[-1]."""
    b, data, indices = ctx.b, ctx.input(0), ctx.input(1)
    bd, k = _nd_dims(ctx, data, indices)
    q, r = indices.type.rank, data.type.rank
    idx = index_vectors(ctx, 1, list(data.type.shape[bd:bd + k]))
    mapped = tuple(range(bd, bd + k))
    return [b.gather(data, idx, offset_dims=tuple(range(q - 1, q - 1 + r - bd - k)),
                     collapsed_slice_dims=mapped, start_index_map=mapped,
                     operand_batching_dims=tuple(range(bd)),
                     start_indices_batching_dims=tuple(range(bd)), index_vector_dim=q - 1,
                     slice_sizes=(1,) * (bd + k) + data.type.shape[bd + k:])]


def _combiner(ctx: NodeContext, dtype: DType) -> Symbol:
    """The scatter computation for the node's `reduction` ('none': the update wins)."""
    reduction = ctx.attr("reduction", "none")
    if reduction != "none":
        if reduction not in REDUCTIONS:
            raise ctx.unsupported(f"reduction '{reduction}'")
        return binary_computation(ctx.b.module, REDUCTIONS[reduction], dtype)
    return replace_computation(ctx.b, dtype)


def replace_computation(b: Builder, dtype: DType) -> Symbol:
    """The scatter computation in which the update replaces the old value."""
    module = b.module
    name = f"replace_{dtype.value}"
    if name not in module.functions:
        scalar = TensorType(dtype, ())
        old, new = Value(scalar, "old"), Value(scalar, "new")
        module.add_function(Function(name, [old, new], [], [new]))
    return Symbol(name)


@converts("ScatterElements", "Scatter")
def convert_scatter_elements(ctx: NodeContext) -> list[Value]:
    """out = data with out[i... (axis: indices[i...])] = updates[i...] (or combined)."""
    b, data, indices, updates = ctx.b, ctx.input(0), ctx.input(1), ctx.input(2)
    r = data.type.rank
    axis = ctx.axis(int(ctx.attr("axis", 0)), r)
    if indices.type.rank != r or updates.type.shape != indices.type.shape:
        raise ctx.fail(f"indices {indices.type} and updates {updates.type} must match in "
                       f"shape and have the rank of {data.type}")
    full = _coordinates(b, index_vectors(ctx, 1, [data.type.shape[axis]]), axis)
    return [b.scatter(data, full, updates, update_window_dims=(),
                      inserted_window_dims=tuple(range(r)),
                      scatter_dims_to_operand_dims=tuple(range(r)), index_vector_dim=r,
                      computation=_combiner(ctx, data.type.dtype))]


@converts("ScatterND")
def convert_scatter_nd(ctx: NodeContext) -> list[Value]:
    """out = data with out[indices[i...]] = updates[i...] (slices of the trailing dims)."""
    b, data, indices, updates = ctx.b, ctx.input(0), ctx.input(1), ctx.input(2)
    q, r = indices.type.rank, data.type.rank
    k = indices.type.shape[-1] if q else 0
    want = indices.type.shape[:-1] + data.type.shape[k:]
    if q < 1 or k > r or updates.type.shape != want:
        raise ctx.fail(f"updates {updates.type} must have shape {list(want)}")
    idx = index_vectors(ctx, 1, list(data.type.shape[:k]))
    return [b.scatter(data, idx, updates, update_window_dims=tuple(range(q - 1, updates.type.rank)),
                      inserted_window_dims=tuple(range(k)),
                      scatter_dims_to_operand_dims=tuple(range(k)), index_vector_dim=q - 1,
                      computation=_combiner(ctx, data.type.dtype))]


@converts("OneHot")
def convert_one_hot(ctx: NodeContext) -> list[Value]:
    """values[1] where iota == indices (negatives count from depth), values[0] elsewhere."""
    b, indices, values = ctx.b, ctx.input(0), ctx.input(2)
    depth = int(np.asarray(ctx.const_input(1, "depth")).reshape(-1)[0])
    rank = indices.type.rank + 1
    axis = ctx.axis(int(ctx.attr("axis", -1)), rank)
    shape = (*indices.type.shape[:axis], depth, *indices.type.shape[axis:])
    idx = b.convert(indices, DType.S64)
    zero = splat_like(b, 0, idx)
    idx = b.add(idx, b.select(b.compare(idx, zero, direction="LT"), splat_like(b, depth, idx),
                              zero))
    dims = tuple(d for d in range(rank) if d != axis)
    spread = b.op(ops.broadcast_in_dim, [idx], {"shape": shape, "broadcast_dimensions": dims})
    hit = b.compare(b.iota(dtype=DType.S64, shape=shape, dimension=axis), spread,
                    direction="EQ")
    if values.type.size != 2:
        raise ctx.fail(f"values must hold [off, on], got {values.type}")
    flat = b.reshape(values, (2,))
    off, on = (b.broadcast_to(b.reshape(b.slice(flat, start_indices=(i,), limit_indices=(i + 1,),
                                                strides=(1,)), ()), shape) for i in (0, 1))
    return [b.select(hit, on, off)]
