"""Patterns that turn the op chains of softmax and layer normalization (as the ONNX frontend
and exporters spell them) into the fused row ops `softmax` and `layer_norm`.

A row statistic is ``broadcast_in_dim(reshape(reduce(x, init) {dimensions = [d]}))`` back to
x's shape (the reshape puts a size-1 dimension at d), optionally divided by the row length
before the broadcast (a mean). Softmax is
``divide(e, rowsum(e))`` with ``e = exp(subtract(x, rowmax(x)))``; the core of a layer norm
is ``multiply(c, broadcast(rsqrt(add(mean(multiply(c, c)), eps))))`` with
``c = subtract(x, broadcast(mean(x)))``. Only float32/float64 rows match. The scale and bias
multiply/add after a layer norm are left to the elementwise fusion. The ops of the old
chain lose their users and dead code elimination removes them.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol, attr_ints, attr_of
from nxcc.ir.core import Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import binary_op_of
from nxcc.ir.opdef import OpDef
from nxcc.ir.patterns import RewritePattern, Rewriter
from nxcc.ir.rewrite import constant_value

_FLOATS = (DType.F32, DType.F64)


def _owner(v: Value, opdef: OpDef) -> Op | None:
    return v.owner if v.owner is not None and v.owner.opdef is opdef else None


def _named(v: Value, op: Op) -> Value:
    """`v`, named (and sharded) as the result of the op it replaces."""
    v.name = op.result.name
    v.sharding = op.result.sharding
    return v


def _splat(v: Value) -> float | None:
    d = constant_value(v)
    return float(d.splat_value) if d is not None and d.is_splat else None


def _unbroadcast(v: Value, shape: tuple[int, ...]) -> Value | None:
    """x when v = broadcast_in_dim(x) to `shape` with identity dims (x has size-1 dims)."""
    b = _owner(v, ops.broadcast_in_dim)
    if b is None or b.result.type.shape != shape:
        return None
    if tuple(attr_ints(b.attrs, "broadcast_dimensions")) != tuple(range(len(shape))):
        return None
    return b.operands[0]


def _row_reduce(v: Value, module: Module, combiner: OpDef, init: float) -> tuple[Value, int] | None:
    """(x, d) when v = reshape(reduce(x, init) {dimensions = [d]}) with a size-1 dim at d."""
    r = _owner(v, ops.reshape)
    red = _owner(r.operands[0], ops.reduce) if r is not None else None
    if red is None or len(red.operands) != 2 or _splat(red.operands[1]) != init:
        return None
    dims = attr_ints(red.attrs, "dimensions")
    x = red.operands[0]
    combined = binary_op_of(module, attr_of(red.attrs, "computation", Symbol).name)
    if len(dims) != 1 or combined is not combiner:
        return None
    keep = list(x.type.shape)
    keep[dims[0]] = 1
    return (x, dims[0]) if tuple(keep) == v.type.shape else None


def _row_mean(v: Value, module: Module) -> tuple[Value, int] | None:
    """(x, d) when v = divide(rowsum(x), n) with n the length of x's dimension d."""
    div = _owner(v, ops.divide)
    found = _row_reduce(div.operands[0], module, ops.add, 0.0) if div is not None else None
    if div is None or found is None or _splat(div.operands[1]) != float(
            found[0].type.shape[found[1]]):
        return None
    return found


class FuseSoftmax(RewritePattern):
    """divide(e, rowsum(e)), e = exp(x - rowmax(x)) -> softmax(x)."""

    ops = (ops.divide,)

    def __init__(self, module: Module) -> None:
        self.module = module

    def rewrite(self, op: Op, rewriter: Rewriter) -> list[Value] | None:
        e, s = op.operands
        shape = op.result.type.shape
        if op.result.type.dtype not in _FLOATS or _owner(e, ops.exp) is None:
            return None
        total = _unbroadcast(s, shape)
        total_of = _row_reduce(total, self.module, ops.add, 0.0) if total is not None else None
        sub = _owner(e.owner.operands[0], ops.subtract)  # type: ignore[union-attr]
        if total_of is None or total_of[0] is not e or sub is None:
            return None
        x, m = sub.operands
        peak = _unbroadcast(m, shape)
        peak_of = (_row_reduce(peak, self.module, ops.maximum, float("-inf"))
                   if peak is not None else None)
        if peak_of is None or peak_of != (x, total_of[1]):
            return None
        return [_named(rewriter.b.softmax(x, dimension=total_of[1]), op)]


class FuseLayerNorm(RewritePattern):
    """c * broadcast(rsqrt(mean(c * c) + eps)), c = x - broadcast(mean(x)) -> layer_norm(x)."""

    ops = (ops.multiply,)

    def __init__(self, module: Module) -> None:
        self.module = module

    def rewrite(self, op: Op, rewriter: Rewriter) -> list[Value] | None:
        c, scale = op.operands
        shape = op.result.type.shape
        sub = _owner(c, ops.subtract)
        inv = _unbroadcast(scale, shape)
        root = _owner(inv, ops.rsqrt) if inv is not None else None
        plus = _owner(root.operands[0], ops.add) if root is not None else None
        if op.result.type.dtype not in _FLOATS or sub is None or plus is None:
            return None
        eps = _splat(plus.operands[1])
        var = _row_mean(plus.operands[0], self.module)
        square = _owner(var[0], ops.multiply) if var is not None else None
        if eps is None or square is None or square.operands != [c, c]:
            return None
        x, m = sub.operands
        mean = _unbroadcast(m, shape)
        mean_of = _row_mean(mean, self.module) if mean is not None else None
        if mean_of is None or mean_of != (x, var[1]):  # type: ignore[index]
            return None
        fused = rewriter.b.layer_norm(x, dimension=var[1], epsilon=eps)  # type: ignore[index]
        return [_named(fused, op)]
