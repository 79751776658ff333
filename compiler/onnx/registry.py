"""The converter registry: ONNX op type -> function lowering one node to core ops.

Operators of the default domain are keyed by their type (``Conv``), others by
``domain.type`` (``ai.onnx.ml.Binarizer``).

A converter takes a `NodeContext` (builder, node, opset, input values, attributes) and
returns the node's output values in order. It may return fewer values than the node has
outputs only when the missing outputs are not used (their names are empty); it raises
`FrontendError` for anything it cannot convert.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from nxcc.compiler.onnx.context import NodeContext
    from nxcc.ir.core import Value

Converter = Callable[["NodeContext"], Sequence["Value | None"]]

CONVERTERS: dict[str, Converter] = {}


def converter(*op_types: str) -> Callable[[Converter], Converter]:
    """Register the decorated function as the converter of each of `op_types`."""

    def register(fn: Converter) -> Converter:
        for op_type in op_types:
            if op_type in CONVERTERS:
                raise ValueError(f"converter for {op_type} registered twice")
            CONVERTERS[op_type] = fn
        return fn

    return register
