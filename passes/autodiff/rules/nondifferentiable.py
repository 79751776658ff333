"""Ops whose gradient is zero wherever it exists: constants, iota, comparisons, rounding.

Registered explicitly so that "no rule" stays an error: reaching one of these on a
differentiable path contributes nothing, by decision rather than by omission.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


@gradient_rule(ops.constant, ops.iota, ops.compare, ops.is_finite, ops.sign, ops.floor, ops.ceil,
               ops.round_even, ops.round_afz)
def zero_gradient(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    """Piecewise constant (or no operands): no gradient flows back."""
    return [None] * len(op.operands)
