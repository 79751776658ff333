"""Small ONNX models built in memory as fuzz seeds for what the example models lack:
subgraphs (If, Loop, Scan, each with its own initializers and Constant nodes), every form of
Constant, ConstantOfShape, Cast/CastLike, Resize, integer and low-precision initializers,
attribute tensors. Each is a valid model nxcc compiles; the mutators then reach into every
tensor, type and attribute they hold (`onnx_mutations`)."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

OPSET = [h.make_opsetid("", 17)]


def _model(graph: onnx.GraphProto) -> bytes:
    model = h.make_model(graph, opset_imports=OPSET, producer_name="nxcc-fuzz-seed")
    model.ir_version = 8
    return model.SerializeToString()


def _if() -> bytes:
    def branch(name: str, k: float) -> onnx.GraphProto:
        return h.make_graph(
            [h.make_node("Constant", [], [f"{name}_c"], value=nh.from_array(
                np.full(4, k, np.float32), f"{name}_v")),
             h.make_node("Mul", ["x", f"{name}_w"], [f"{name}_m"]),
             h.make_node("Add", [f"{name}_m", f"{name}_c"], [f"{name}_y"])],
            name, [], [h.make_tensor_value_info(f"{name}_y", T.FLOAT, [4])],
            initializer=[nh.from_array(np.arange(4, dtype=np.float32), f"{name}_w")])
    graph = h.make_graph(
        [h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
         h.make_node("Greater", ["s", "zero"], ["c"]),
         h.make_node("If", ["c"], ["y"], then_branch=branch("then", 1.0),
                     else_branch=branch("else", -1.0))],
        "if", [h.make_tensor_value_info("x", T.FLOAT, [4])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
        initializer=[nh.from_array(np.array(0.0, np.float32), "zero")])
    return _model(graph)


def _loop() -> bytes:
    body = h.make_graph(
        [h.make_node("Identity", ["cond_in"], ["cond_out"]),
         h.make_node("Add", ["acc_in", "step"], ["acc_out"]),
         h.make_node("Cast", ["i"], ["i_f"], to=T.FLOAT),
         h.make_node("Mul", ["acc_out", "i_f"], ["scan_out"])],
        "body", [h.make_tensor_value_info("i", T.INT64, []),
                 h.make_tensor_value_info("cond_in", T.BOOL, []),
                 h.make_tensor_value_info("acc_in", T.FLOAT, [3])],
        [h.make_tensor_value_info("cond_out", T.BOOL, []),
         h.make_tensor_value_info("acc_out", T.FLOAT, [3]),
         h.make_tensor_value_info("scan_out", T.FLOAT, [3])],
        initializer=[nh.from_array(np.ones(3, np.float32), "step")])
    graph = h.make_graph(
        [h.make_node("Loop", ["n", "keep", "x"], ["acc", "scans"], body=body)],
        "loop", [h.make_tensor_value_info("x", T.FLOAT, [3])],
        [h.make_tensor_value_info("acc", T.FLOAT, [3]),
         h.make_tensor_value_info("scans", T.FLOAT, [4, 3])],
        initializer=[nh.from_array(np.array(4, np.int64), "n"),
                     nh.from_array(np.array(True), "keep")])
    return _model(graph)


def _scan() -> bytes:
    body = h.make_graph(
        [h.make_node("Add", ["sum_in", "row"], ["sum_out"]),
         h.make_node("Identity", ["sum_out"], ["row_out"])],
        "scan_body", [h.make_tensor_value_info("sum_in", T.FLOAT, [2]),
                      h.make_tensor_value_info("row", T.FLOAT, [2])],
        [h.make_tensor_value_info("sum_out", T.FLOAT, [2]),
         h.make_tensor_value_info("row_out", T.FLOAT, [2])])
    graph = h.make_graph(
        [h.make_node("Scan", ["init", "x"], ["total", "rows"], body=body,
                     num_scan_inputs=1)],
        "scan", [h.make_tensor_value_info("x", T.FLOAT, [5, 2])],
        [h.make_tensor_value_info("total", T.FLOAT, [2]),
         h.make_tensor_value_info("rows", T.FLOAT, [5, 2])],
        initializer=[nh.from_array(np.zeros(2, np.float32), "init")])
    return _model(graph)


def _constants() -> bytes:
    graph = h.make_graph(
        [h.make_node("Constant", [], ["a"], value_floats=[1.0, 2.0, 3.0]),
         h.make_node("Constant", [], ["b"], value_float=0.5),
         h.make_node("Constant", [], ["shape"], value_ints=[3]),
         h.make_node("ConstantOfShape", ["shape"], ["ones"],
                     value=nh.from_array(np.array([1.0], np.float32), "one")),
         h.make_node("Mul", ["a", "b"], ["ab"]),
         h.make_node("Add", ["ab", "ones"], ["abo"]),
         h.make_node("Cast", ["abo"], ["half"], to=T.FLOAT16),
         h.make_node("CastLike", ["half", "x"], ["back"]),
         h.make_node("Add", ["back", "x"], ["y"])],
        "constants", [h.make_tensor_value_info("x", T.FLOAT, [3])],
        [h.make_tensor_value_info("y", T.FLOAT, [3])])
    return _model(graph)


def _dtypes() -> bytes:
    graph = h.make_graph(
        [h.make_node("Cast", ["w16"], ["w16f"], to=T.FLOAT),
         h.make_node("Cast", ["wbf"], ["wbff"], to=T.FLOAT),
         h.make_node("Cast", ["w8"], ["w8f"], to=T.FLOAT),
         h.make_node("Gather", ["table", "idx"], ["rows"], axis=0),
         h.make_node("Reshape", ["rows", "shape"], ["flat"]),
         h.make_node("Add", ["w16f", "wbff"], ["s1"]),
         h.make_node("Add", ["s1", "w8f"], ["s2"]),
         h.make_node("Add", ["s2", "flat"], ["s3"]),
         h.make_node("Resize", ["s3img", "", "scales"], ["up"], mode="nearest"),
         h.make_node("Reshape", ["s3", "img"], ["s3img"]),
         h.make_node("ReduceMean", ["up"], ["y"], keepdims=0)],
        "dtypes", [h.make_tensor_value_info("idx", T.INT64, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [])],
        initializer=[nh.from_array(np.ones(4, np.float16), "w16"),
                     h.make_tensor("wbf", T.BFLOAT16, [4], [1.0, 2.0, 3.0, 4.0]),
                     nh.from_array(np.arange(4, dtype=np.int8), "w8"),
                     nh.from_array(np.arange(8, dtype=np.float32).reshape(4, 2), "table"),
                     nh.from_array(np.array([4], np.int64), "shape"),
                     nh.from_array(np.array([1, 1, 2, 2], np.int64), "img"),
                     nh.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    return _model(graph)


def onnx_seeds() -> list[bytes]:
    """The seed models, serialized."""
    return [_if(), _loop(), _scan(), _constants(), _dtypes()]
