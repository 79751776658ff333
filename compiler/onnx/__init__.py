"""The ONNX frontend: an ONNX model (file or ModelProto) -> an IR module of core ops.

    from compiler.onnx import import_onnx
    module = import_onnx("model.onnx", input_shapes={"x": (8, 16)})

Every ONNX operator decomposes into the core ops of `ir.ops` (Gemm -> dot_general + add,
Softmax -> reduce/exp/divide, MaxPool -> reduce_window...). `SUPPORTED_OPS` lists the
operator types converted; anything else raises `FrontendError` with code NCC_EUOC002.
"""

from __future__ import annotations

from compiler.onnx import (  # noqa: F401  (each module registers its converters)
    activation,
    einsum,
    elementwise,
    gather_scatter,
    indexing,
    linalg,
    nn,
    norm,
    pool,
    reduce,
    resize,
    shape,
)
from compiler.onnx.errors import FrontendError
from compiler.onnx.importer import import_onnx
from compiler.onnx.registry import CONVERTERS

SUPPORTED_OPS: list[str] = sorted(CONVERTERS)

__all__ = ["SUPPORTED_OPS", "FrontendError", "import_onnx"]
