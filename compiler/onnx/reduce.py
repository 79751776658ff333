"""Reductions (ReduceSum, ReduceMean, ... ) and ArgMax/ArgMin, as core ``reduce`` ops."""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, binary, keep_shape, reduce, splat_like
from nxcc.compiler.onnx.indexing import strided_slice
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import compare_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef

REDUCE_OPS = ("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
              "ReduceL1", "ReduceL2", "ReduceSumSquare", "ReduceLogSum", "ReduceLogSumExp")


def _axes_from_input(ctx: NodeContext) -> bool:
    """Whether this opset gives the axes as input 1 (ReduceSum since 13, others since 18)."""
    return ctx.opset >= (13 if ctx.op_type == "ReduceSum" else 18)


def reduction_dims(ctx: NodeContext, rank: int) -> list[int] | None:
    """The dims to reduce, or None when the node is the identity (noop_with_empty_axes)."""
    if _axes_from_input(ctx):
        axes = ctx.ints_input(1, "axes")
    else:
        axes = ctx.attr("axes")
    if not axes:
        if ctx.attr("noop_with_empty_axes", 0):
            return None
        return list(range(rank))
    return ctx.axes([int(a) for a in axes], rank)


@converts(*REDUCE_OPS)
def convert_reduce(ctx: NodeContext) -> list[Value]:
    b, x = ctx.b, ctx.input(0)
    dims = reduction_dims(ctx, x.type.rank)
    if dims is None:
        return [x]
    keep = bool(ctx.attr("keepdims", 1))
    op = ctx.op_type
    if op == "ReduceMax":
        return [reduce(b, x, dims, ops.maximum, keep)]
    if op == "ReduceMin":
        return [reduce(b, x, dims, ops.minimum, keep)]
    if op == "ReduceProd":
        return [reduce(b, x, dims, ops.multiply, keep)]
    if op == "ReduceLogSumExp":
        return [_log_sum_exp(ctx, x, dims, keep)]
    if op in ("ReduceL2", "ReduceSumSquare"):
        x = b.multiply(x, x)
    elif op == "ReduceL1":
        x = x if x.type.dtype.is_unsigned_int else b.abs(x)
    total = reduce(b, x, dims, ops.add, keep)
    if op == "ReduceMean":
        count = 1
        for d in dims:
            count *= x.type.shape[d]
        total = b.divide(total, splat_like(b, count, total))
    elif op == "ReduceL2":
        total = b.sqrt(total)
    elif op == "ReduceLogSum":
        total = b.log(total)
    return [total]


def _log_sum_exp(ctx: NodeContext, x: Value, dims: list[int], keep: bool) -> Value:
    """log(sum(exp(x - m))) + m with m = max(x), finite where the naive form overflows."""
    b = ctx.b
    peak = reduce(b, x, dims, ops.maximum, keepdims=True)
    finite = b.select(b.is_finite(peak), peak, splat_like(b, 0, peak))
    total = reduce(b, b.exp(binary(b, ops.subtract, x, finite)), dims, ops.add, keep)
    shift = b.reshape(finite, total.type.shape)
    return b.add(b.log(total), shift)


def arg_extreme(b: Builder, x: Value, axis: int, opcode: OpDef, last: bool, keepdims: bool
                ) -> Value:
    """The s64 index of the maximum (`opcode` 'maximum') or minimum along `axis`: the
    first one, or the last when `last`. Lowered as extreme, compare, iota, min/max."""
    peak = reduce(b, x, [axis], opcode, keepdims=True)
    hit = b.compare(x, b.broadcast_to(peak, x.type.shape), direction="EQ")
    if x.type.dtype.is_float:  # a NaN is the extreme (as numpy); it compares unequal
        hit = b.op(ops.or_, [hit, b.compare(x, x, direction="NE")])
    iota = b.iota(dtype=DType.S64, shape=x.type.shape, dimension=axis)
    n = x.type.shape[axis]
    if last:
        index = reduce(b, b.select(hit, iota, splat_like(b, -1, iota)), [axis], ops.maximum)
    else:
        index = reduce(b, b.select(hit, iota, splat_like(b, n, iota)), [axis], ops.minimum)
    if keepdims:
        index = b.reshape(index, keep_shape(x.type.shape, [axis]))
    return index


@converts("ArgMax", "ArgMin")
def convert_arg(ctx: NodeContext) -> list[Value]:
    x = ctx.input(0)
    axis = ctx.axis(int(ctx.attr("axis", 0)), x.type.rank)
    opcode = ops.maximum if ctx.op_type == "ArgMax" else ops.minimum
    return [arg_extreme(ctx.b, x, axis, opcode, bool(ctx.attr("select_last_index", 0)),
                        bool(ctx.attr("keepdims", 1)))]


@converts("TopK")
def convert_topk(ctx: NodeContext) -> list[Value]:
    """A stable sort of (x, iota) along `axis` (descending when largest), sliced to K;
    ties keep the lower index first."""

    b, x = ctx.b, ctx.input(0)
    axis = ctx.axis(int(ctx.attr("axis", -1)), x.type.rank)
    k = int(ctx.const_input(1, "K").reshape(-1)[0]) if ctx.opset >= 10 else int(ctx.attr("k"))
    n = x.type.shape[axis]
    if not 0 <= k <= n:
        raise ctx.fail(f"K={k} is out of range for dimension {axis} of size {n}")
    largest = bool(ctx.attr("largest", 1))
    iota = b.iota(dtype=DType.S64, shape=x.type.shape, dimension=axis)
    comparator = compare_computation(b.module, "GT" if largest else "LT",
                                     [x.type.dtype, DType.S64])
    values, indices = b.ops(ops.sort, [x, iota], {"dimension": axis, "is_stable": True,
                                                "comparator": comparator})
    counts = [k if d == axis else m for d, m in enumerate(x.type.shape)]
    ones, zeros = [1] * x.type.rank, [0] * x.type.rank
    return [strided_slice(b, values, zeros, counts, ones),
            strided_slice(b, indices, zeros, counts, ones)]
