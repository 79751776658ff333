"""What a gradient rule builds with: a builder at the end of the function and small helpers."""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


class GradContext:
    """A builder appending the backward ops, and `needs(i)`: whether operand i of the op
    being differentiated wants a gradient (rules skip the work for those that do not)."""

    def __init__(self, b: Builder) -> None:
        self.b = b
        self._needs: Sequence[bool] = ()

    def set_needs(self, needs: Sequence[bool]) -> None:
        self._needs = needs

    def needs(self, i: int) -> bool:
        return self._needs[i]

    # values

    def zeros(self, t: TensorType) -> Value:
        return self.b.splat(0, t)

    def full(self, value: float, t: TensorType) -> Value:
        return self.b.splat(value, t)

    def scalar(self, value: float | int | bool, dtype: DType) -> Value:
        return self.b.splat(value, TensorType(dtype, ()))

    def sum(self, x: Value, dims: Sequence[int]) -> Value:
        """`x` summed over `dims` (the dims dropped); `x` when `dims` is empty."""
        if not dims:
            return x
        dtype = x.type.dtype
        return self.b.op(ops.reduce, [x, self.scalar(0, dtype)], {
            "dimensions": tuple(sorted(dims)),
            "computation": binary_computation(self.b.module, ops.add, dtype)})

    def sum_to(self, g: Value, t: TensorType) -> Value:
        """`g` summed down to `t`: a scalar operand broadcast by an elementwise op (clamp's
        bounds, select's branches) gets the sum of the cotangent."""
        if g.type.shape == t.shape:
            return g
        assert t.rank == 0, f"cannot sum {g.type} to {t}"
        return self.sum(g, range(g.type.rank))

    def broadcast(self, x: Value, shape: Sequence[int], dims: Sequence[int]) -> Value:
        """`x` placed at result dims `dims` of `shape` (broadcast_in_dim)."""
        if x.type.shape == tuple(shape):
            return x
        return self.b.op(ops.broadcast_in_dim, [x], {"shape": tuple(shape),
                                                   "broadcast_dimensions": tuple(dims)})

    def like(self, x: Value, t: TensorType) -> Value:
        """A scalar `x` broadcast to `t` (or `x` itself when it already has `t`'s shape)."""
        return self.broadcast(x, t.shape, ()) if x.type.rank == 0 else x
