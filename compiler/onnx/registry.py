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

from nxcc.ir.registry import Registry

if TYPE_CHECKING:
    from nxcc.compiler.onnx.context import NodeContext
    from nxcc.ir.core import Value

Converter = Callable[["NodeContext"], Sequence["Value | None"]]

#: ONNX op type (``domain.type`` outside the default domain) -> its converter.
CONVERTERS: Registry[str, Converter] = Registry("converter")

#: ``@converts("Conv", ...)`` registers the decorated function as the converter of those op
#: types.
converts = CONVERTERS.register
