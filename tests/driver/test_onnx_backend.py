"""nxcc.driver.onnx_backend: the ONNX backend convention over compile -> NEFF -> runtime."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.base import Backend as OnnxBackend

import nxcc.driver.onnx_backend as nxcc
from nxcc.backend.runtime.api import Model
from nxcc.driver.errors import CompileError


def _model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
           outputs: list[onnx.ValueInfoProto], inits: list[TensorProto] | None = None,
           opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits or [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def f32(name: str, shape: list[int | str]) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def test_module_follows_the_backend_convention() -> None:
    assert issubclass(nxcc.Backend, OnnxBackend)
    assert nxcc.supports_device("CPU")
    assert not nxcc.supports_device("CUDA")
    assert callable(nxcc.prepare) and callable(nxcc.run_model)


def test_positional_inputs_skip_initializers_listed_as_inputs() -> None:
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "w")
    model = _model([helper.make_node("MatMul", ["x", "w"], ["y"]),
                    helper.make_node("Relu", ["y"], ["z"])],
                   [f32("w", [3, 2]), f32("x", [4, 3])], [f32("y", [4, 2]), f32("z", [4, 2])],
                   [w])
    rep = nxcc.prepare(model)
    assert all(isinstance(m, Model) for m in rep._loaded.values())
    x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
    y, z = rep.run([x])
    np.testing.assert_allclose(y, x @ numpy_helper.to_array(w), rtol=1e-6)
    np.testing.assert_allclose(z, np.maximum(y, 0))
    (y2, _z2) = rep.run({"x": x})
    np.testing.assert_array_equal(y, y2)
    (y3, _z3) = nxcc.run_model(model, [x])
    np.testing.assert_array_equal(y, y3)


def test_dynamic_dimension_compiles_per_input_shape() -> None:
    model = _model([helper.make_node("Sigmoid", ["x"], ["y"])], [f32("x", ["n", 3])],
                   [f32("y", ["n", 3])])
    rep = nxcc.prepare(model)
    for n in (1, 5):
        x = np.linspace(-2, 2, 3 * n, dtype=np.float32).reshape(n, 3)
        (y,) = rep.run([x])
        np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-6)
    assert len(rep._loaded) == 2


def test_shape_input_is_frozen_per_value() -> None:
    """A Reshape's shape given as an input is compiled in as a constant, per value."""
    shape = helper.make_tensor_value_info("s", TensorProto.INT64, [2])
    model = _model([helper.make_node("Reshape", ["x", "s"], ["y"])], [f32("x", [2, 6]), shape],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b"])])
    rep = nxcc.prepare(model)
    assert rep.frozen == {"s"}
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for s in ([3, 4], [6, -1]):
        (y,) = rep.run([x, np.array(s, np.int64)])
        np.testing.assert_array_equal(y, x.reshape(s))


def test_run_node() -> None:
    node = helper.make_node("Add", ["a", "b"], ["c"])
    a = np.ones((2, 2), np.float32)
    (c,) = nxcc.run_node(node, [a, 2 * a])
    np.testing.assert_array_equal(c, 3 * a)


def test_unsupported_operator_is_a_compile_error() -> None:
    model = _model([helper.make_node("ImageDecoder", ["x"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.UINT8, [10])],
                   [helper.make_tensor_value_info("y", TensorProto.UINT8, ["h", "w", "c"])],
                   opset=20)
    with pytest.raises(CompileError, match="NCC_EUOC002"):
        nxcc.prepare(model)
