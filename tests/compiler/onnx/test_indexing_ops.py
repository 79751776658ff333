"""Indexing converters (compiler/onnx/indexing.py): Slice, Split, Gather, Pad, Tile, Trilu
and CumSum against onnxruntime, one node at a time."""

from __future__ import annotations

import numpy as np

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
    Case("Split", {"x": f32(6, 4)}, {"axis": 0}, outputs=3, opset=11),
    Case("Split", {"x": f32(6, 4)}, {"split": [1, 3], "axis": 1}, outputs=2, opset=11,
         id="Split-attr"),
    Case("Split", {"x": f32(6, 4)}, consts={"s": i64([2, 4])}, outputs=2, opset=13,
         id="Split-input"),
    Case("Split", {"x": f32(7, 4)}, {"num_outputs": 3}, outputs=3, opset=18,
         id="Split-num-outputs"),
    Case("Slice", X, {"starts": [1, -3], "ends": [3, 100], "axes": [1, 2]}, opset=9),
    Case("Slice", X, consts={"s": i64([-1, 0]), "e": i64([-100, 10**12]), "a": i64([2, 0]),
                             "st": i64([-2, 1])}, opset=13, id="Slice-negative-steps"),
    Case("Slice", X, consts={"s": i64([0, 2]), "e": i64([3, 0])}, opset=10, id="Slice-empty"),
    Case("Slice", X, consts={"s": i64([5]), "e": i64([-10]), "a": i64([1]),
                             "st": i64([-1])}, opset=13, id="Slice-reverse-all"),
    Case("Gather", X, {"axis": 1}, consts={"i": i64([[0, -1], [2, 1]])}),
    Case("Gather", {"x": f32(5, 3), "i": np.array([4, -2, 0], np.int64)}, id="Gather-dyn"),
    Case("Gather", X, {"axis": 2}, consts={"i": i64(-1)}, id="Gather-scalar"),
    Case("Gather", {"x": f32(5, 3), "i": np.array(3, np.int32)}, {"axis": 0},
         id="Gather-dyn-scalar"),
    Case("Tile", {"x": f32(2, 3)}, consts={"r": i64([2, 3])}),
    Case("Pad", X, consts={"p": i64([0, 1, 2, 0, 0, 1])}, opset=13),
    Case("Pad", X, consts={"p": i64([1, -1, 0, 1]), "v": np.array(2.5, np.float32),
                           "a": i64([0, 2])}, opset=18, id="Pad-axes-value"),
    Case("Pad", X, {"pads": [0, 1, 2, 0, 0, 1], "value": 1.5}, opset=9, id="Pad-attrs"),
    Case("Pad", X, {"mode": "reflect"}, consts={"p": i64([0, 2, 1, 0, 1, 3])}, opset=13,
         id="Pad-reflect"),
    Case("Pad", X, {"mode": "edge"}, consts={"p": i64([1, 2, 1, 0, 1, 3])}, opset=13,
         id="Pad-edge"),
    Case("Pad", X, {"mode": "wrap"}, consts={"p": i64([0, 2, 1, 0, 1, 3])}, opset=19,
         id="Pad-wrap"),
    Case("Trilu", {"x": f32(2, 4, 5)}, consts={"k": i64(1)}, opset=14),
    Case("Trilu", {"x": f32(4, 5)}, {"upper": 0}, opset=14, id="Trilu-lower"),
    Case("CumSum", {"x": f32(3, 5)}, consts={"a": i64(1)}),
    Case("CumSum", {"x": f32(3, 5)}, {"exclusive": 1, "reverse": 1}, consts={"a": i64(-1)},
         id="CumSum-exclusive-reverse"),
    Case("Slice", X, {"starts": [1], "ends": [-1]}, opset=7),
    Case("Pad", X, {"pads": [0, 0, 1, 0, 0, 2], "mode": "edge"}, opset=7),
    Case("Split", {"x": f32(4, 2)}, {"split": [1, 3]}, outputs=2, opset=7),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
