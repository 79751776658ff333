"""Shape converters (compiler/onnx/shape.py): reshapes, transposes, concatenation,
constants, ranges and shape queries against onnxruntime, one node at a time."""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from tests.compiler.onnx.helpers import (
    Case,
    RandomInputs,
    i64,
    matches_onnxruntime,
    without_constant_folding,
)

data = RandomInputs()
f32 = data.f32
X = {"x": f32(2, 3, 4)}

CASES = [
    Case("Reshape", X, consts={"s": i64([4, 0, -1])}),
    Case("Reshape", {"x": f32(2, 0, 3)}, {"allowzero": 1}, consts={"s": i64([0, 3])},
         opset=14, id="Reshape-allowzero"),
    Case("Flatten", X), Case("Flatten", X, {"axis": 0}, id="Flatten-0"),
    Case("Flatten", X, {"axis": -1}, id="Flatten-neg"),
    Case("Transpose", X), Case("Transpose", X, {"perm": [1, 0, 2]}, id="Transpose-perm"),
    Case("Squeeze", {"x": f32(1, 3, 1)}, {"axes": [0]}, opset=11),
    Case("Squeeze", {"x": f32(1, 3, 1)}, consts={"a": i64([-1])}, opset=13, id="Squeeze-13"),
    Case("Squeeze", {"x": f32(1, 3, 1)}, opset=13, id="Squeeze-all"),
    Case("Unsqueeze", X, {"axes": [0, 3]}, opset=11),
    Case("Unsqueeze", X, consts={"a": i64([-1, 1])}, opset=13, id="Unsqueeze-13"),
    Case("Concat", {"a": f32(2, 3), "b": f32(2, 1), "c": f32(2, 2)}, {"axis": -1}),
    Case("Expand", {"x": f32(3, 1)}, consts={"s": i64([2, 1, 4])}),
    Case("Constant", {}, {"value": numpy_helper.from_array(f32(2, 3))}),
    Case("Constant", {}, {"value_float": 2.5}, id="Constant-float"),
    Case("Constant", {}, {"value_ints": [1, 2]}, id="Constant-ints"),
    Case("ConstantOfShape", {}, {"value": numpy_helper.from_array(np.array([3], np.int32))},
         consts={"s": i64([2, 3])}),
    Case("ConstantOfShape", {}, consts={"s": i64([])}, id="ConstantOfShape-scalar"),
    Case("Range", {}, consts={"a": np.float32(1), "b": np.float32(7), "d": np.float32(1.5)}),
    Case("Range", {}, consts={"a": i64(10), "b": i64(2), "d": i64(-3)}, id="Range-int"),
    Case("Shape", X), Case("Shape", X, {"start": 1}, opset=15, id="Shape-start"),
    Case("Size", X), Case("EyeLike", {"x": f32(3, 4)}, {"k": 1}),
    Case("DepthToSpace", {"x": f32(2, 8, 3, 2)}, {"blocksize": 2}),
    Case("DepthToSpace", {"x": f32(2, 8, 3, 2)}, {"blocksize": 2, "mode": "CRD"},
         id="DepthToSpace-CRD"),
    Case("SpaceToDepth", {"x": f32(2, 2, 4, 6)}, {"blocksize": 2}),
    Case("Dropout", X, opset=13), Case("Dropout", X, opset=10, outputs=2, id="Dropout-mask",
                                   reference="onnx"),  # onnxruntime's mask is all false
    Case("Identity", X),
    Case("Reshape", X, consts={"s": i64([-1, 4])}, opset=7),
    Case("Unsqueeze", X, {"axes": [1]}, opset=7), Case("Squeeze", {"x": f32(3, 1)}, opset=7),
    Case("Concat", {"a": f32(2, 3), "b": f32(2, 3)}, {"axis": 0}, opset=7),
    Case("Dropout", X, opset=7), Case("Flatten", X, opset=7), Case("Transpose", X, opset=7),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
