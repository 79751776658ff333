"""Opsets 7 through 21: one small CNN-and-friends model written at opset 7 is converted
with onnx.version_converter to every opset from 8 to 21 and must match onnxruntime at
each (the converters follow each opset's operator versions: Softmax's 2-D coercion before
13, attributes that became inputs, Upsample before Resize...). A model older than 7 is
upgraded by the frontend itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxcc.driver.onnx_backend as nxcc

RNG = np.random.default_rng(3)


def _init(name: str, arr: np.ndarray) -> TensorProto:
    return numpy_helper.from_array(arr, name)


def opset7_model() -> onnx.ModelProto:
    """Pad, Conv, BatchNormalization, Relu, MaxPool, Dropout, Reshape, Gemm, Clip,
    Unsqueeze, Squeeze, Softmax, ReduceSum, Slice, Concat, in their opset-7 forms."""
    f = np.float32
    inits = [
        _init("w", RNG.standard_normal((4, 3, 3, 3)).astype(f)),
        _init("b", RNG.standard_normal(4).astype(f)),
        _init("scale", RNG.uniform(0.5, 1.5, 4).astype(f)),
        _init("bias", RNG.standard_normal(4).astype(f)),
        _init("mean", RNG.standard_normal(4).astype(f)),
        _init("var", RNG.uniform(0.5, 1.5, 4).astype(f)),
        _init("fc", RNG.standard_normal((36, 5)).astype(f)),
        _init("fcb", RNG.standard_normal(5).astype(f)),
        _init("shape", np.array([2, -1], np.int64)),
    ]
    nodes = [
        helper.make_node("Pad", ["x"], ["xp"], mode="constant", pads=[0, 0, 1, 1, 0, 0, 1, 1]),
        helper.make_node("Conv", ["xp", "w", "b"], ["c"], kernel_shape=[3, 3]),
        helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["n"]),
        helper.make_node("Relu", ["n"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Dropout", ["p"], ["d"]),
        helper.make_node("Reshape", ["d", "shape"], ["flat"]),
        helper.make_node("Gemm", ["flat", "fc", "fcb"], ["g"]),
        helper.make_node("Clip", ["g"], ["cl"], min=-2.0, max=2.0),
        helper.make_node("Unsqueeze", ["cl"], ["u"], axes=[1]),
        helper.make_node("Squeeze", ["u"], ["s"], axes=[1]),
        helper.make_node("Softmax", ["s"], ["sm"], axis=1),
        helper.make_node("ReduceSum", ["sm"], ["total"], axes=[1], keepdims=1),
        helper.make_node("Slice", ["sm"], ["head"], starts=[0], ends=[3], axes=[1]),
        helper.make_node("Concat", ["head", "total"], ["y"], axis=1),
    ]
    # IR version 3 lists initializers among the graph inputs
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 6, 6])] + [
        helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in inits]
    graph = helper.make_graph(
        nodes, "opsets", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 7)])
    model.ir_version = 3
    onnx.checker.check_model(model)
    return model


@pytest.mark.parametrize("opset", range(7, 22))
def test_model_at_every_opset_matches_onnxruntime(opset: int) -> None:
    model = opset7_model()
    if opset > 7:
        model = onnx.version_converter.convert_version(model, opset)
        # the converter's new initializers (attributes turned inputs) need IR version 4+
        model.ir_version = max(4, helper.find_min_ir_version_for(list(model.opset_import)))
    assert model.opset_import[0].version == opset
    x = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
    (got,) = nxcc.prepare(model).run([x])
    want = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_opset_older_than_7_is_upgraded(tmp_path: Path) -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "old", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, [3])], [helper.make_tensor_value_info("y", TensorProto.FLOAT,
                                                                       [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 3
    x = np.array([-1.0, 0.0, 2.0], np.float32)
    (y,) = nxcc.prepare(model).run([x])
    np.testing.assert_array_equal(y, np.maximum(x, 0))
