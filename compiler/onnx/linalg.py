"""MatMul and Gemm as ``dot_general`` (+ elementwise scaling and bias), and Det."""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, broadcast_shapes, reduce, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


def matmul(ctx: NodeContext, a: Value, w: Value) -> Value:
    """numpy.matmul: 1-D operands are promoted (and the added dim removed afterwards), batch
    dims broadcast. A 2-D right operand contracts directly against the last dim of `a`."""
    b = ctx.b
    if a.type.rank == 0 or w.type.rank == 0:
        raise ctx.fail(f"operands must have rank >= 1, got {a.type} and {w.type}")
    if a.type.dtype is not w.type.dtype:
        raise ctx.fail(f"operands {a.type} and {w.type} have different element types")
    squeeze_m, squeeze_n = a.type.rank == 1, w.type.rank == 1
    if squeeze_m:
        a = b.reshape(a, (1, *a.type.shape))
    if squeeze_n:
        w = b.reshape(w, (*w.type.shape, 1))
    ka, kw = a.type.shape[-1], w.type.shape[-2]
    if ka != kw:
        raise ctx.fail(f"cannot multiply {a.type} by {w.type}: inner sizes {ka} and {kw} differ")
    if w.type.rank == 2:
        out = b.dot_general(a, w, lhs_contracting_dims=(a.type.rank - 1,),
                            rhs_contracting_dims=(0,))
    else:
        batch = broadcast_shapes(ctx, a.type.shape[:-2], w.type.shape[:-2])
        a = b.broadcast_to(a, (*batch, *a.type.shape[-2:]))
        w = b.broadcast_to(w, (*batch, *w.type.shape[-2:]))
        nb = len(batch)
        dims = tuple(range(nb))
        out = b.dot_general(a, w, lhs_batch_dims=dims, rhs_batch_dims=dims,
                            lhs_contracting_dims=(nb + 1,), rhs_contracting_dims=(nb,))
    shape = list(out.type.shape)
    if squeeze_n:
        shape.pop(-1)
    if squeeze_m:
        shape.pop(-1 if squeeze_n else -2)
    return b.reshape(out, shape)


@converts("MatMul")
def convert_matmul(ctx: NodeContext) -> list[Value]:
    return [matmul(ctx, ctx.input(0), ctx.input(1))]


def _scaled(b: Builder, x: Value, k: float) -> Value:
    return x if k == 1.0 else b.multiply(x, splat_like(b, k, x))


@converts("Gemm")
def convert_gemm(ctx: NodeContext) -> list[Value]:
    """alpha * A' B' + beta * C, A' = A or A^T (transA), B' likewise; C broadcasts to
    [M, N] and is optional since opset 11."""
    b = ctx.b
    a, w = ctx.input(0, "A"), ctx.input(1, "B")
    if a.type.rank != 2 or w.type.rank != 2:
        raise ctx.fail(f"A and B must be matrices, got {a.type} and {w.type}")
    ta, tb = int(ctx.attr("transA", 0)), int(ctx.attr("transB", 0))
    ka, kb = a.type.shape[0 if ta else 1], w.type.shape[1 if tb else 0]
    if ka != kb:
        raise ctx.fail(f"inner sizes {ka} and {kb} of {a.type} and {w.type} differ")
    if a.type.dtype is not w.type.dtype:
        raise ctx.fail(f"A {a.type} and B {w.type} have different element types")
    out = b.dot_general(a, w, lhs_contracting_dims=(0 if ta else 1,),
                        rhs_contracting_dims=(1 if tb else 0,))
    out = _scaled(b, out, float(ctx.attr("alpha", 1.0)))
    c = ctx.optional(2)
    beta = float(ctx.attr("beta", 1.0))
    if c is not None and beta != 0.0:
        if broadcast_shapes(ctx, c.type.shape, out.type.shape) != out.type.shape:
            raise ctx.fail(f"C {c.type} does not broadcast to the result {out.type}")
        out = b.add(out, b.broadcast_to(_scaled(b, c, beta), out.type.shape))
    return [out]


@converts("Det")
def convert_det(ctx: NodeContext) -> list[Value]:
    """Determinant of [..., n, n] by Gaussian elimination with partial pivoting, unrolled
    over the n columns (each step whole-array ops on every matrix of the batch): the pivot
    row (largest |a|, first on ties) is swapped in through one-hot masks, the rows below
    are eliminated, and the result is the signed product of the pivots."""
    b, x = ctx.b, ctx.input(0)
    if not x.type.dtype.is_float or x.type.rank < 2 or x.type.shape[-1] != x.type.shape[-2]:
        raise ctx.fail(f"expects float square matrices [..., n, n], got {x.type}")
    n = x.type.shape[-1]
    batch = x.type.shape[:-2]
    r = x.type.rank
    a = x
    rows = b.iota(dtype=DType.S64, shape=(*batch, n), dimension=r - 2)
    sign = b.splat(1, x.type.with_shape(batch))
    det = None
    for k in range(n):
        col = _col(b, a, k)                                            # [..., n]
        mag = b.select(b.compare(rows, b.splat(k, rows.type), direction="GE"), b.abs(col),
                       splat_like(b, -1, col))
        best = reduce(b, mag, [r - 2], ops.maximum, keepdims=True)
        is_best = b.compare(mag, b.broadcast_to(best, mag.type.shape), direction="EQ")
        first = reduce(b, b.select(is_best, rows, b.splat(n, rows.type)), [r - 2], ops.minimum,
                       keepdims=True)
        p_hot = b.compare(rows, b.broadcast_to(first, rows.type.shape), direction="EQ")
        k_hot = b.compare(rows, b.splat(k, rows.type), direction="EQ")
        row_p = _pick_row(b, a, p_hot)                                  # [..., n]
        row_k = _pick_row(b, a, k_hot)
        a = b.add(a, b.add(_outer(b, k_hot, b.subtract(row_p, row_k), a),
                           _outer(b, p_hot, b.subtract(row_k, row_p), a)))
        swapped = b.compare(b.reshape(first, batch), b.splat(k, first.type.with_shape(batch)),
                            direction="NE")
        sign = b.select(swapped, b.negate(sign), sign)
        pivot = b.reshape(_slice2(b, a, k, k), batch)
        det = pivot if det is None else b.multiply(det, pivot)
        below = b.compare(rows, b.splat(k, rows.type), direction="GT")
        factor = b.divide(_col(b, a, k), b.broadcast_to(b.reshape(pivot, (*batch, 1)),
                                                           (*batch, n)))
        factor = b.select(below, factor, splat_like(b, 0, factor))
        a = b.subtract(a, b.multiply(
            b.op(ops.broadcast_in_dim, [factor], {"shape": a.type.shape, "broadcast_dimensions":
                                                tuple(range(r - 1))}),
            b.op(ops.broadcast_in_dim, [_pick_row(b, a, k_hot)], {
                "shape": a.type.shape, "broadcast_dimensions": (*range(r - 2), r - 1)})))
    if det is None:
        return [b.splat(1, x.type.with_shape(batch))]
    return [b.multiply(det, sign)]


def _col(b: Builder, a: Value, k: int) -> Value:
    """Column k of [..., n, n]: [..., n]."""
    r = a.type.rank
    piece = b.slice(a, start_indices=(0,) * (r - 1) + (k,),
                    limit_indices=(*a.type.shape[:-1], k + 1), strides=(1,) * r)
    return b.reshape(piece, a.type.shape[:-1])


def _slice2(b: Builder, a: Value, i: int, j: int) -> Value:
    r = a.type.rank
    return b.slice(a, start_indices=(0,) * (r - 2) + (i, j),
                   limit_indices=(*a.type.shape[:-2], i + 1, j + 1), strides=(1,) * r)


def _pick_row(b: Builder, a: Value, hot: Value) -> Value:
    """sum over rows of a where `hot` (one true row per matrix): that row, [..., n]."""
    r = a.type.rank
    mask = b.op(ops.broadcast_in_dim, [hot], {"shape": a.type.shape,
                                            "broadcast_dimensions": tuple(range(r - 1))})
    return reduce(b, b.select(mask, a, splat_like(b, 0, a)), [r - 2], ops.add)


def _outer(b: Builder, hot: Value, row: Value, like: Value) -> Value:
    """`row` placed at the rows `hot` marks (zeros elsewhere), shaped like `like`."""
    r = like.type.rank
    mask = b.op(ops.broadcast_in_dim, [hot], {"shape": like.type.shape,
                                            "broadcast_dimensions": tuple(range(r - 1))})
    full = b.op(ops.broadcast_in_dim, [row], {"shape": like.type.shape,
                                            "broadcast_dimensions": (*range(r - 2), r - 1)})
    return b.select(mask, full, splat_like(b, 0, full))
