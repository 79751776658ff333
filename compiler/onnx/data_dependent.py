"""Operators whose output shape depends on input values: NonZero, Unique,
NonMaxSuppression and Compress.

nxcc's shapes are static, so the values that decide the output shape must be known at
compile time (NCC_EMOD025 otherwise; the ONNX backend then compiles per value of such
inputs). With all their inputs constant, NonZero, Unique and NonMaxSuppression are
evaluated at compile time by the importer's constant folding (the ONNX reference
implementation), before any converter runs; their converters only report which input is
missing. Compress needs only its condition: the kept indices become a constant gather of
a data input that stays dynamic.
"""

from __future__ import annotations

import numpy as np

from compiler.onnx.context import NodeContext
from compiler.onnx.indexing import take
from compiler.onnx.registry import converter
from ir.core import Value

WHAT = {"NonZero": ("X",), "Unique": ("X",),
        "NonMaxSuppression": ("boxes", "scores", "max_output_boxes_per_class",
                              "iou_threshold", "score_threshold")}


@converter("NonZero", "Unique", "NonMaxSuppression")
def convert_value_shaped(ctx: NodeContext) -> list[Value]:
    """Raises NCC_EMOD025 for the first input not known at compile time."""
    for i, what in enumerate(WHAT[ctx.op_type]):
        if ctx.optional(i) is not None:
            ctx.const_input(i, what)
    raise ctx.unsupported(f"{ctx.op_type} on these constant inputs (compile-time evaluation "
                          "failed)")


@converter("Compress")
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
