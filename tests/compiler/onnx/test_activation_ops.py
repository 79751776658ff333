"""Activation converters (compiler/onnx/activation.py), Softmax and friends included,
against onnxruntime, one node at a time."""

from __future__ import annotations

from tests.compiler.onnx.helpers import Case, RandomInputs, matches_onnxruntime

data = RandomInputs()
f32 = data.f32
X = {"x": f32(2, 3, 4)}

CASES = [
    Case("Relu", X), Case("LeakyRelu", X, {"alpha": 0.2}), Case("Elu", X, {"alpha": 0.7}),
    Case("Selu", X), Case("Celu", X, {"alpha": 1.5}, opset=12),
    Case("Gelu", X, opset=20), Case("Gelu", X, {"approximate": "tanh"}, opset=20,
                                    id="Gelu-tanh"),
    Case("HardSigmoid", X), Case("HardSwish", X, opset=14), Case("Softplus", X),
    Case("Softsign", X), Case("Mish", X, opset=18), Case("ThresholdedRelu", X, {"alpha": 0.3}),
    Case("PRelu", {"x": f32(2, 3, 4), "s": f32(3, 1)}),
    Case("Softmax", X, opset=13), Case("Softmax", X, {"axis": 1}, opset=13, id="Softmax-ax1"),
    Case("Softmax", X, opset=11, id="Softmax-coerce-2d"),
    Case("Softmax", X, {"axis": 0}, opset=11, id="Softmax-coerce-ax0"),
    Case("LogSoftmax", X, {"axis": 1}, opset=13),
    Case("LogSoftmax", X, opset=11, id="LogSoftmax-coerce-2d"),
    Case("Hardmax", X, opset=13), Case("Hardmax", X, opset=11, id="Hardmax-coerce"),
    Case("Softmax", X, opset=7),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
