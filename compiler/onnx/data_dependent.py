"""Compress: an operator whose output shape depends on input values.

nxcc's shapes are static, so the values that decide the output shape must be known at
compile time (NCC_EMOD025 otherwise). Compress needs only its condition: the kept indices
become a constant gather of a data input that stays dynamic. NonZero, Unique and
NonMaxSuppression have no converter: their output shapes depend on all of their data.
"""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext
from nxcc.compiler.onnx.indexing import take
from nxcc.compiler.onnx.registry import converts
from nxcc.ir.core import Value


@converts("Compress")
def convert_compress(ctx: NodeContext) -> list[Value]:
    """x's slices along `axis` (x flattened when there is none) where condition is true
    (a condition shorter than the axis keeps nothing past its end)."""
    b, x = ctx.b, ctx.input(0)
    keep = np.flatnonzero(ctx.const_input(1, "condition").reshape(-1).astype(bool))
    axis = ctx.attr("axis")
    if axis is None:
        x = b.reshape(x, (x.type.size,))
        axis = 0
    axis = ctx.axis(int(axis), x.type.rank)
    if keep.size and keep[-1] >= x.type.shape[axis]:
        raise ctx.fail(f"condition selects index {keep[-1]} beyond dim {axis} of {x.type}")
    return [take(b, x, b.constant(keep.astype(np.int64)), axis)]
