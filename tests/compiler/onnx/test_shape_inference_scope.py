"""ONNX data propagation runs only for graphs it can tell something (`reads_shape_values`)."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from nxcc.compiler.onnx.loader import infer_shapes, reads_shape_values
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType


def _graph(nodes: list[onnx.NodeProto], out: str, shape: list[int] | None) -> onnx.GraphProto:
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                        [2, 6])],
                             [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)])


def test_plain_arithmetic_reads_no_shape_values() -> None:
    g = _graph([helper.make_node("Add", ["x", "x"], ["a"]), helper.make_node("Relu", ["a"], ["b"])],
               "b", [2, 6])
    assert not reads_shape_values(g)


def test_reshape_reduction_other_domain_and_subgraph_read_them() -> None:
    reshape = helper.make_node("Reshape", ["x", "s"], ["y"])
    reduce = helper.make_node("ReduceSum", ["x", "axes"], ["y"])
    custom = helper.make_node("Thing", ["x"], ["y"], domain="com.example")
    branch = _graph([helper.make_node("Relu", ["x"], ["b"])], "b", [2, 6])
    cond = helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)
    for node in (reshape, reduce, custom, cond):
        assert reads_shape_values(_graph([node], "y", None)), node.op_type


def test_a_shape_computed_from_constants_is_still_propagated() -> None:
    nodes = [helper.make_node("Constant", [], ["a"], value=helper.make_tensor(
                 "a", TensorProto.INT64, [1], [3])),
             helper.make_node("Constant", [], ["b"], value=helper.make_tensor(
                 "b", TensorProto.INT64, [1], [4])),
             helper.make_node("Concat", ["a", "b"], ["s"], axis=0),
             helper.make_node("Reshape", ["x", "s"], ["y"])]
    model = helper.make_model(_graph(nodes, "y", None),
                              opset_imports=[helper.make_opsetid("", 17)])
    inferred = infer_shapes(model, [("x", TensorType(DType.F32, (2, 6)))])
    info = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    dims = [d.dim_value for d in info["y"].type.tensor_type.shape.dim]
    assert dims == [3, 4]  # only data propagation of the Concat knows this
