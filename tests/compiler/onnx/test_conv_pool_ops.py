"""Convolution and pooling converters (compiler/onnx/nn.py, pool.py) against onnxruntime,
one node at a time."""

from __future__ import annotations

from tests.compiler.onnx.helpers import (
    Case,
    RandomInputs,
    matches_onnxruntime,
    without_constant_folding,
)

data = RandomInputs()
f32 = data.f32
IMG = {"x": f32(2, 4, 9, 8)}
CONV_W = f32(6, 4, 3, 3)

CASES = [
    Case("Conv", IMG, {"pads": [1, 1, 1, 1]}, consts={"w": CONV_W, "b": f32(6)}),
    Case("Conv", IMG, {"strides": [2, 2], "dilations": [2, 1], "pads": [0, 1, 2, 0]},
         consts={"w": CONV_W}, id="Conv-strided-dilated"),
    Case("Conv", IMG, {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, consts={"w": CONV_W},
         id="Conv-same-upper"),
    Case("Conv", IMG, {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, consts={"w": CONV_W},
         id="Conv-same-lower"),
    Case("Conv", IMG, {"auto_pad": "VALID"}, consts={"w": CONV_W}, id="Conv-valid"),
    Case("Conv", IMG, {"group": 2}, consts={"w": f32(6, 2, 3, 3), "b": f32(6)},
         id="Conv-group"),
    Case("Conv", {"x": f32(2, 3, 10)}, {"pads": [2, 1]}, consts={"w": f32(4, 3, 3)},
         id="Conv-1d"),
    Case("Conv", {"x": f32(1, 2, 5, 4, 6)}, consts={"w": f32(3, 2, 2, 3, 2), "b": f32(3)},
         id="Conv-3d"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "pads": [1, 0, 0, 1]},
         consts={"w": f32(4, 3, 3, 3), "b": f32(3)}),
    Case("ConvTranspose", IMG, {"strides": [2, 3], "output_padding": [1, 2], "dilations":
                                [1, 2], "group": 2}, consts={"w": f32(4, 3, 3, 2)},
         id="ConvTranspose-group"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
         consts={"w": f32(4, 3, 3, 3)}, id="ConvTranspose-same-upper"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "output_shape": [19, 16]},
         consts={"w": f32(4, 3, 3, 3)}, id="ConvTranspose-output-shape"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    Case("MaxPool", IMG, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                          "ceil_mode": 1}, opset=12, id="MaxPool-ceil"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 1], "auto_pad":
                          "SAME_UPPER"}, opset=12, id="MaxPool-dilated-same",
         reference="onnx"),  # onnxruntime ignores the dilation when padding SAME
    Case("MaxPool", {"x": f32(2, 3, 11)}, {"kernel_shape": [3], "strides": [3],
                                           "ceil_mode": 1}, opset=12, id="MaxPool-1d-ceil"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                              "count_include_pad": 1}, id="AveragePool-include-pad"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1,
                              "pads": [1, 0, 0, 0], "count_include_pad": 1},
         id="AveragePool-ceil-include"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1},
         id="AveragePool-ceil"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER"},
         id="AveragePool-same-lower"),
    Case("AveragePool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 2, 0, 1],
                              "ceil_mode": 1, "strides": [2, 1]}, opset=19,
         id="AveragePool-dilated"),
    Case("AveragePool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 2, 0, 1],
                              "count_include_pad": 1}, opset=19,
         id="AveragePool-dilated-include"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1],
                          "strides": [2, 2], "ceil_mode": 1}, opset=12,
         id="MaxPool-dilated-ceil"),
    *(Case(op, {"x": f32(1, 2, 5)}, {"kernel_shape": [2], "strides": [2], "pads": [1, 1],
                                      "ceil_mode": 1}, opset=12, id=f"{op}-ceil-last-window")
      for op in ("MaxPool", "AveragePool")),
    Case("LpPool", IMG, {"kernel_shape": [2, 2], "p": 2}, opset=18),
    Case("GlobalAveragePool", IMG), Case("GlobalMaxPool", IMG), Case("GlobalLpPool", IMG),
    Case("MaxPool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=7),
    Case("AveragePool", IMG, {"kernel_shape": [2, 2], "count_include_pad": 1}, opset=7),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
