"""MatMul and Gemm as ``dot_general`` (+ elementwise scaling and bias)."""

from __future__ import annotations

from compiler.onnx.context import NodeContext, broadcast_shapes, splat_like
from compiler.onnx.registry import converter
from ir.builder import Builder
from ir.core import Value


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


@converter("MatMul")
def convert_matmul(ctx: NodeContext) -> list[Value]:
    return [matmul(ctx, ctx.input(0), ctx.input(1))]


def _scaled(b: Builder, x: Value, k: float) -> Value:
    return x if k == 1.0 else b.multiply(x, splat_like(b, k, x))


@converter("Gemm")
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
