"""Gather and scatter converters (compiler/onnx/gather_scatter.py): GatherElements,
GatherND, ScatterND, ScatterElements, Scatter and OneHot against onnxruntime, one node at a
time."""

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

CASES = [
    Case("GatherElements", {"x": f32(3, 4), "i": np.array([[0, -1, 2, 1]], np.int64)},
         {"axis": 0}),
    Case("GatherND", {"x": f32(3, 4, 5), "i": np.array([[0, -1], [2, 1]], np.int64)}),
    Case("GatherND", {"x": f32(3, 4, 5), "i": np.array([[[1], [3]], [[0], [2]], [[3], [3]]],
                                                       np.int64)},
         {"batch_dims": 1}, id="GatherND-batch"),
    Case("ScatterND", {"x": f32(4, 3), "u": f32(2, 3)}, consts={"i": i64([[3], [-4]])},
         order=["x", "i", "u"]),
    Case("ScatterND", {"x": f32(4, 3), "i": np.array([[1, 2], [1, 2]], np.int64),
                       "u": f32(2)}, {"reduction": "add"}, opset=16, id="ScatterND-add"),
    Case("ScatterElements", {"x": f32(3, 4), "i": np.array([[2, 0, 1, 2]], np.int64),
                             "u": f32(1, 4)}, {"axis": 0}),
    Case("Scatter", {"x": f32(3, 4), "i": np.array([[2, 0, 1, 2]], np.int64),
                     "u": f32(1, 4)}, opset=10),
    Case("ScatterElements", {"x": f32(3, 4), "i": np.array([[1, 1], [-1, 0]], np.int64),
                             "u": f32(2, 2)}, {"axis": 1, "reduction": "max"}, opset=18,
         id="ScatterElements-max"),
    Case("OneHot", {"i": np.array([[1, -1], [0, 2]], np.int64)},
         consts={"d": i64(3), "v": np.array([-1, 5], np.float32)}),
    Case("OneHot", {"i": np.array([1, 0], np.float32)}, {"axis": 0},
         consts={"d": np.array([4], np.float32), "v": np.array([0, 1], np.float32)},
         id="OneHot-axis0"),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
