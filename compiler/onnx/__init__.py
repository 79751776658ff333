"""The ONNX frontend: an ONNX model (file or ModelProto) -> an IR module of core ops.

    from nxcc.compiler.onnx import import_onnx
    module = import_onnx("model.onnx", input_shapes={"x": (8, 16)})

Every ONNX operator decomposes into the core ops of `ir.ops` (Gemm -> dot_general + add,
Softmax -> reduce/exp/divide, MaxPool -> reduce_window...), either by a converter of this
package or, for an operator without one, through the ONNX function body onnx defines for
it (`functions.py`). `SUPPORTED_OPS` lists what onnx's node conformance suite (or, for the
few without node cases, the unit tests against onnxruntime) shows working: the converted
operators and `FUNCTION_OPS`, the function-defined ones verified; anything with neither a
converter nor a function body raises `FrontendError` with code NCC_EUOC002.
"""

from __future__ import annotations

from nxcc.compiler.onnx import (  # noqa: F401  (each module registers its converters)
    activation,
    bitwise,
    cast,
    control,
    data_dependent,
    deform_conv,
    einsum,
    elementwise,
    gather_scatter,
    grid_sample,
    indexing,
    linalg,
    ml,
    nn,
    norm,
    pool,
    quantize,
    random,
    reduce,
    resize,
    rnn,
    roi_align,
    sequence_index,
    shape,
    spectral,
    tfidf,
    training,
    trig,
    unpool,
)
from nxcc.compiler.onnx.errors import FrontendError
from nxcc.compiler.onnx.importer import import_onnx
from nxcc.compiler.onnx.registry import CONVERTERS

# Operators converted through their ONNX function body whose node cases pass
# (operators of other domains are spelled domain.op_type).
FUNCTION_OPS: tuple[str, ...] = (
    "AffineGrid", "Attention", "BlackmanWindow", "CausalConvWithState", "CenterCropPad",
    "DynamicQuantizeLinear", "HammingWindow", "HannWindow", "LinearAttention",
    "MeanVarianceNormalization", "NegativeLogLikelihoodLoss", "RMSNormalization",
    "RotaryEmbedding", "Shrink", "SoftmaxCrossEntropyLoss", "SwiGLU", "Swish",
    "ai.onnx.preview.FlexAttention",
)

SUPPORTED_OPS: list[str] = sorted(set(CONVERTERS) | set(FUNCTION_OPS))

__all__ = ["FUNCTION_OPS", "SUPPORTED_OPS", "FrontendError", "import_onnx"]
