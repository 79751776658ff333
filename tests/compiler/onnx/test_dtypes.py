"""dtype coverage: float32, float16, bfloat16, float64, int8/16/32/64, uint8/16/32/64 and
bool through Cast (every pair, against onnxruntime; the ONNX reference evaluator for
bfloat16, which onnxruntime's Python API cannot pass) and common elementwise operators
(against the ONNX reference evaluator), compiled and run through backend.onnx_backend."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import nxcc.driver.onnx_backend as nxcc
from tests.compiler.onnx.helpers import Case, RandomInputs, compare, make_model

DTYPES = {
    "float32": TensorProto.FLOAT, "float16": TensorProto.FLOAT16,
    "bfloat16": TensorProto.BFLOAT16, "float64": TensorProto.DOUBLE,
    "int8": TensorProto.INT8, "int16": TensorProto.INT16, "int32": TensorProto.INT32,
    "int64": TensorProto.INT64, "uint8": TensorProto.UINT8, "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32, "uint64": TensorProto.UINT64, "bool": TensorProto.BOOL,
}
NUMERIC = [d for d in DTYPES if d != "bool"]


def np_dtype(name: str) -> np.dtype:
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def values(name: str) -> np.ndarray:
    """Values every type holds (no overflow, no negatives for the unsigned ones)."""
    if name == "bool":
        return np.array([False, True, True, False, True, False])
    if name in ("float32", "float16", "bfloat16", "float64"):
        return np.array([0, 1.5, 2.25, 3, 7.75, 100], np.float32).astype(np_dtype(name))
    return np.array([0, 1, 2, 3, 7, 100]).astype(np_dtype(name))


def one_node(op: str, inputs: dict[str, str], out: str, **attrs: object) -> onnx.ModelProto:
    node = helper.make_node(op, list(inputs), ["y"], **attrs)
    graph = helper.make_graph(
        [node], op, [helper.make_tensor_value_info(k, DTYPES[v], [6]) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", DTYPES[out], [6])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9  # what onnxruntime reads
    return model


@pytest.mark.parametrize("src", DTYPES)
def test_cast_from_every_type_to_every_type(src: str) -> None:
    x = values(src)
    for dst in DTYPES:
        model = one_node("Cast", {"x": src}, dst, to=DTYPES[dst])
        (got,) = nxcc.prepare(model).run([x])
        if "bfloat16" in (src, dst):  # onnxruntime's Python API has no bfloat16 arrays
            (want,) = ReferenceEvaluator(model).run(None, {"x": x})
        else:
            want = ort.InferenceSession(model.SerializeToString(),
                                        providers=["CPUExecutionProvider"]).run(None,
                                                                                {"x": x})[0]
        assert got.dtype == want.dtype, (src, dst)
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                      err_msg=f"{src} -> {dst}")


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Max", "Min", "Equal", "Less", "Abs",
                                "Neg", "Where"])
def test_elementwise_on_every_numeric_type(op: str, dtype: str) -> None:
    if op == "Neg" and dtype.startswith("uint"):
        pytest.skip("Neg is defined on signed types only")
    a, b = values(dtype), values(dtype)[::-1].copy()
    if op in ("Sub",) and dtype.startswith("uint"):
        a, b = np.maximum(a, b), np.minimum(a, b)
    inputs: dict[str, str] = {"a": dtype} if op in ("Abs", "Neg") else {"a": dtype, "b": dtype}
    feeds = [a] if op in ("Abs", "Neg") else [a, b]
    out = "bool" if op in ("Equal", "Less") else dtype
    if op == "Where":
        inputs = {"c": "bool", "a": dtype, "b": dtype}
        feeds = [values("bool"), a, b]
    model = one_node(op, inputs, out)
    (got,) = nxcc.prepare(model).run(feeds)
    (want,) = ReferenceEvaluator(model).run(None, dict(zip(inputs, feeds, strict=True)))
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64))


half = RandomInputs()
f16, f32 = half.f16, half.f32

HALF = [
    Case("Add", {"x": f16(2, 3), "y": f16(3)}, id="Add-f16"),
    Case("MatMul", {"a": f16(3, 4), "b": f16(4, 2)}, id="MatMul-f16"),
    Case("Softmax", {"x": f16(2, 5)}, opset=13, id="Softmax-f16"),
    Case("LayerNormalization", {"x": f16(2, 8)}, consts={"s": f16(8), "b": f16(8)},
         id="LayerNorm-f16-stash"),
    Case("ReduceSum", {"x": f16(2, 8)}, opset=13, id="ReduceSum-f16"),
    Case("Cast", {"x": f32(4)}, {"to": 10}, id="Cast-f16"),
]


@pytest.mark.parametrize("case", HALF, ids=str)
def test_float16_matches_onnxruntime(case: Case) -> None:
    compare(make_model(case), case.inputs, rtol=2e-3, atol=2e-3)
