"""Reduction converters (compiler/onnx/reduce.py): the Reduce* family, ArgMax/ArgMin and
TopK against onnxruntime, one node at a time."""

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
f32, pos = data.f32, data.pos
X = {"x": f32(2, 3, 4)}

CASES = [
    *(Case(op, X, {"axes": [1], "keepdims": 0}, opset=11)
      for op in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
                 "ReduceSumSquare", "ReduceLogSumExp", "ReduceSum")),
    *(Case(op, X, consts={"a": i64([0, -1])}, opset=18, id=f"{op}-18")
      for op in ("ReduceMean", "ReduceMax", "ReduceMin", "ReduceL2")),
    Case("ReduceLogSum", {"x": pos(3, 4)}, {"axes": [1]}, opset=13),
    Case("ReduceSum", X, consts={"a": i64([1])}, opset=13, id="ReduceSum-13"),
    Case("ReduceSum", X, {"keepdims": 0}, opset=13, id="ReduceSum-all"),
    Case("ReduceSum", X, {"noop_with_empty_axes": 1}, opset=13, id="ReduceSum-noop"),
    Case("ReduceMean", X, opset=13, id="ReduceMean-all"),
    Case("ReduceMean", X, {"axes": [-1]}, opset=7),
    Case("ArgMax", X, {"axis": 1}),
    Case("ArgMin", {"x": np.array([[1, 3, 1], [2, 0, 0]], np.float32)},
         {"axis": 1, "keepdims": 0}, id="ArgMin-ties"),
    Case("ArgMax", {"x": np.array([[1, 3, 3], [2, 2, 0]], np.float32)},
         {"axis": 1, "select_last_index": 1}, id="ArgMax-last"),
    Case("ArgMax", {"x": np.array([[1, 3, 3], [5, 2, 0]], np.int32)}, id="ArgMax-int"),
    Case("TopK", {"x": np.array([[1, 3, 3, 2], [0, 5, -1, 5]], np.float32)},
         consts={"k": i64([3])}, outputs=2, opset=11),
    Case("TopK", X, {"axis": 1, "largest": 0}, consts={"k": i64([2])}, outputs=2, opset=11,
         id="TopK-smallest"),
    Case("TopK", X, {"k": 2}, outputs=2, opset=9, id="TopK-attr"),
]

test_matches_onnxruntime = matches_onnxruntime(CASES)
test_converters_without_constant_folding = without_constant_folding(CASES)
