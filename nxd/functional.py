"""Elementwise and softmax helpers for the computation between the parallel layers."""

from __future__ import annotations

import math

from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.nxd.model import Model
from nxcc.passes.autodiff.losses import reduce_all


def gelu(m: Model, x: Value) -> Value:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) (GPT-2's form)."""
    b = m.b

    def c(v: float) -> Value:
        return b.splat(v, x.type)

    cube = b.multiply(b.multiply(x, x), x)
    inner = b.add(x, b.multiply(cube, c(0.044715)))
    t = b.tanh(b.multiply(inner, c(math.sqrt(2.0 / math.pi))))
    return b.multiply(b.multiply(x, c(0.5)), b.add(t, c(1.0)))


def silu(m: Model, x: Value) -> Value:
    """x * sigmoid(x)."""
    return m.b.multiply(x, m.b.logistic(x))


def softmax(m: Model, x: Value, mask: Value | None = None, fill: float = -1e30) -> Value:
    """Softmax over the last dimension; where the pred `mask` (x's shape) is False the
    entry is `fill` first (exp gives 0). The max shift passes no gradient."""
    b, shape = m.b, x.type.shape
    if mask is not None:
        x = b.select(mask, x, b.splat(fill, x.type))
    last = (len(shape) - 1,)
    lead = tuple(range(len(shape) - 1))
    top = m.stop_gradient(reduce_all(b, x, ops.maximum, last))
    e = b.exp(b.subtract(x, b.broadcast_in_dim(top, shape=shape, broadcast_dimensions=lead)))
    total = reduce_all(b, e, ops.add, last)
    return b.divide(e, b.broadcast_in_dim(total, shape=shape, broadcast_dimensions=lead))


def reduce_sum(m: Model, x: Value, dims: tuple[int, ...]) -> Value:
    """The sum of `x` over dimensions `dims` (they are removed)."""
    return reduce_all(m.b, x, ops.add, dims)


def mean(m: Model, x: Value, dims: tuple[int, ...]) -> Value:
    """The mean of `x` over dimensions `dims` (they are removed)."""
    total = reduce_sum(m, x, dims)
    count = 1
    for d in dims:
        count *= x.type.shape[d]
    return m.b.multiply(total, m.b.splat(1.0 / count, total.type))
