"""Elementwise converters (compiler/onnx/elementwise.py, cast.py): arithmetic, comparisons,
logic, bitwise, Where, Clip and Cast against onnxruntime, one node at a time."""

from __future__ import annotations

import numpy as np

from tests.compiler.onnx.helpers import (
    Case,
    RandomInputs,
    matches_onnxruntime,
    without_constant_folding,
)

data = RandomInputs()
f32, pos = data.f32, data.pos
X = {"x": f32(2, 3, 4)}
XY = {"x": f32(2, 3, 4), "y": f32(3, 1)}

CASES = [
    *(Case(op, XY) for op in ("Add", "Sub", "Mul", "Max", "Min", "Sum", "Mean")),
    Case("Div", {"x": f32(2, 3, 4), "y": pos(4)}),
    Case("Pow", {"x": pos(2, 3), "y": f32(2, 3)}),
    Case("Pow", {"x": pos(2, 3), "y": np.array(2, np.int64)}, id="Pow-int-exponent"),
    Case("Pow", {"x": np.array([4, 9, 2], np.int32), "y": np.array([1.5, 0.5, 3], np.float32)},
         id="Pow-int-base"),
    *(Case(op, X) for op in ("Neg", "Abs", "Exp", "Erf", "Tanh", "Sigmoid", "Floor", "Ceil",
                             "Sign", "Sin", "Cos", "Round")),
    *(Case(op, {"x": pos(2, 3)}) for op in ("Sqrt", "Log", "Reciprocal")),
    Case("Abs", {"x": np.array([-3, 4, 0], np.int32)}, id="Abs-int"),
    Case("Sign", {"x": np.array([-3, 4, 0], np.int64)}, id="Sign-int"),
    Case("Div", {"x": np.array([7, -7, 9], np.int32), "y": np.array([2, 2, -4], np.int32)},
         id="Div-int"),
    Case("Mod", {"x": np.array([7, -7, 9, -9], np.int32), "y": np.array([2, 3, -4, -4],
                                                                            np.int32)}),
    Case("Mod", {"x": f32(6), "y": pos(6)}, {"fmod": 1}, id="Mod-fmod"),
    *(Case(op, XY) for op in ("Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual")),
    Case("Not", {"x": np.array([True, False])}),
    Case("Tan", {"x": f32(5) * 0.5}),
    Case("Atan", {"x": f32(5) * 3}),
    *(Case(op, {"x": np.array([[5, -3]], np.int32), "y": np.array([[3], [-6]], np.int32)},
           opset=18) for op in ("BitwiseAnd", "BitwiseOr", "BitwiseXor")),
    Case("BitwiseNot", {"x": np.array([5, -3], np.int32)}, opset=18),
    Case("BitwiseNot", {"x": np.array([5, 200], np.uint8)}, opset=18, id="BitwiseNot-u8"),
    *(Case(op, {"x": np.array([[True, False]]), "y": np.array([[True], [False]])})
      for op in ("And", "Or", "Xor")),
    Case("Where", {"c": data.rng.random((3, 1)) > 0.5, "x": f32(2, 3, 4), "y": f32(4)}),
    Case("IsNaN", {"x": np.array([1.0, np.nan, np.inf], np.float32)}),
    Case("IsInf", {"x": np.array([1.0, -np.inf, np.inf], np.float32)}),
    Case("Clip", X, {"min": -0.5, "max": 0.5}, opset=10, id="Clip-attrs"),
    Case("Clip", X, consts={"lo": np.array(-0.5, np.float32), "hi": np.array(0.5, np.float32)},
         opset=13),
    Case("Clip", X, consts={"hi": np.array(0.2, np.float32)}, order=["x", "", "hi"], opset=13,
         id="Clip-max-only"),
    Case("Clip", {"x": f32(5), "lo": np.array(-0.1, np.float32)}, opset=11, id="Clip-dynamic"),
    Case("Cast", X, {"to": 7}, id="Cast-int64"),
    Case("Cast", X, {"to": 9}, id="Cast-bool"),
    Case("Cast", {"x": np.array([1, -2], np.int64)}, {"to": 1}, id="Cast-float"),
    Case("CastLike", {"x": f32(3), "y": np.array([1], np.int32)}, opset=15),
    Case("Add", XY, opset=7),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
