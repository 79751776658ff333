"""Every ONNX converter (and its opset variants) against onnxruntime, one node at a time."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from tests.onnx.helpers import Case, compare, make_model

rng = np.random.default_rng(0)


def f32(*shape: int) -> np.ndarray:
    return rng.standard_normal(shape).astype(np.float32)


def pos(*shape: int) -> np.ndarray:
    return (rng.random(shape) + 0.5).astype(np.float32)


def i64(values: object) -> np.ndarray:
    return np.array(values, dtype=np.int64)


X = {"x": f32(2, 3, 4)}
XY = {"x": f32(2, 3, 4), "y": f32(3, 1)}

ELEMENTWISE = [
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
    Case("Where", {"c": rng.random((3, 1)) > 0.5, "x": f32(2, 3, 4), "y": f32(4)}),
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
    Case("Identity", X),
]

ACTIVATIONS = [
    Case("Relu", X), Case("LeakyRelu", X, {"alpha": 0.2}), Case("Elu", X, {"alpha": 0.7}),
    Case("Selu", X), Case("Celu", X, {"alpha": 1.5}, opset=12),
    Case("Gelu", X, opset=20), Case("Gelu", X, {"approximate": "tanh"}, opset=20,
                                    id="Gelu-tanh"),
    Case("HardSigmoid", X), Case("HardSwish", X, opset=14), Case("Softplus", X),
    Case("Softsign", X), Case("Mish", X, opset=18), Case("ThresholdedRelu", X, {"alpha": 0.3}),
    Case("PRelu", {"x": f32(2, 3, 4), "s": f32(3, 1)}),
    Case("Softmax", X, opset=13), Case("Softmax", X, {"axis": 1}, opset=13, id="Softmax-ax1"),
    Case("Softmax", X, opset=11, id="Softmax-coerce-2d"),
    Case("Softmax", X, {"axis": 0}, opset=11, id="Softmax-coerce-ax0"),
    Case("LogSoftmax", X, {"axis": 1}, opset=13),
    Case("LogSoftmax", X, opset=11, id="LogSoftmax-coerce-2d"),
    Case("Hardmax", X, opset=13), Case("Hardmax", X, opset=11, id="Hardmax-coerce"),
]

LINALG = [
    Case("MatMul", {"a": f32(3, 4), "b": f32(4, 5)}),
    Case("MatMul", {"a": f32(2, 3, 4), "b": f32(4, 5)}, id="MatMul-batch-weights"),
    Case("MatMul", {"a": f32(2, 1, 3, 4), "b": f32(5, 4, 2)}, id="MatMul-broadcast"),
    Case("MatMul", {"a": f32(4), "b": f32(2, 4, 5)}, id="MatMul-1d-lhs"),
    Case("MatMul", {"a": f32(2, 3, 4), "b": f32(4)}, id="MatMul-1d-rhs"),
    Case("MatMul", {"a": f32(4), "b": f32(4)}, id="MatMul-1d-both"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(5)}),
    Case("Gemm", {"a": f32(4, 3), "b": f32(5, 4), "c": f32(3, 1)},
         {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, id="Gemm-trans"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5)}, opset=13, id="Gemm-no-C"),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(1)}, opset=9, id="Gemm-opset9"),
]

IMG = {"x": f32(2, 4, 9, 8)}
CONV_W = f32(6, 4, 3, 3)

NN = [
    Case("Conv", IMG, {"pads": [1, 1, 1, 1]}, consts={"w": CONV_W, "b": f32(6)}),
    Case("Conv", IMG, {"strides": [2, 2], "dilations": [2, 1], "pads": [0, 1, 2, 0]},
         consts={"w": CONV_W}, id="Conv-strided-dilated"),
    Case("Conv", IMG, {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, consts={"w": CONV_W},
         id="Conv-same-upper"),
    Case("Conv", IMG, {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, consts={"w": CONV_W},
         id="Conv-same-lower"),
    Case("Conv", IMG, {"auto_pad": "VALID"}, consts={"w": CONV_W}, id="Conv-valid"),
    Case("Conv", IMG, {"group": 2}, consts={"w": f32(6, 2, 3, 3), "b": f32(6)},
         id="Conv-group"),
    Case("Conv", {"x": f32(2, 3, 10)}, {"pads": [2, 1]}, consts={"w": f32(4, 3, 3)},
         id="Conv-1d"),
    Case("Conv", {"x": f32(1, 2, 5, 4, 6)}, consts={"w": f32(3, 2, 2, 3, 2), "b": f32(3)},
         id="Conv-3d"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "pads": [1, 0, 0, 1]},
         consts={"w": f32(4, 3, 3, 3), "b": f32(3)}),
    Case("ConvTranspose", IMG, {"strides": [2, 3], "output_padding": [1, 2], "dilations":
                                [1, 2], "group": 2}, consts={"w": f32(4, 3, 3, 2)},
         id="ConvTranspose-group"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "auto_pad": "SAME_UPPER"},
         consts={"w": f32(4, 3, 3, 3)}, id="ConvTranspose-same-upper"),
    Case("ConvTranspose", IMG, {"strides": [2, 2], "output_shape": [19, 16]},
         consts={"w": f32(4, 3, 3, 3)}, id="ConvTranspose-output-shape"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 2], "strides": [2, 2]}),
    Case("MaxPool", IMG, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                          "ceil_mode": 1}, opset=12, id="MaxPool-ceil"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 1], "auto_pad":
                          "SAME_UPPER"}, opset=12, id="MaxPool-dilated-same",
         reference="onnx"),  # onnxruntime ignores the dilation when padding SAME
    Case("MaxPool", {"x": f32(2, 3, 11)}, {"kernel_shape": [3], "strides": [3],
                                           "ceil_mode": 1}, opset=12, id="MaxPool-1d-ceil"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1],
                              "count_include_pad": 1}, id="AveragePool-include-pad"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1,
                              "pads": [1, 0, 0, 0], "count_include_pad": 1},
         id="AveragePool-ceil-include"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1},
         id="AveragePool-ceil"),
    Case("AveragePool", IMG, {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER"},
         id="AveragePool-same-lower"),
    Case("AveragePool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 2, 0, 1],
                              "ceil_mode": 1, "strides": [2, 1]}, opset=19,
         id="AveragePool-dilated"),
    Case("AveragePool", IMG, {"kernel_shape": [2, 3], "dilations": [2, 2], "pads": [1, 2, 0, 1],
                              "count_include_pad": 1}, opset=19,
         id="AveragePool-dilated-include"),
    Case("MaxPool", IMG, {"kernel_shape": [2, 2], "dilations": [2, 2], "pads": [1, 1, 1, 1],
                          "strides": [2, 2], "ceil_mode": 1}, opset=12,
         id="MaxPool-dilated-ceil"),
    *(Case(op, {"x": f32(1, 2, 5)}, {"kernel_shape": [2], "strides": [2], "pads": [1, 1],
                                      "ceil_mode": 1}, opset=12, id=f"{op}-ceil-last-window")
      for op in ("MaxPool", "AveragePool")),
    Case("LpPool", IMG, {"kernel_shape": [2, 2], "p": 2}, opset=18),
    Case("GlobalAveragePool", IMG), Case("GlobalMaxPool", IMG), Case("GlobalLpPool", IMG),
    Case("BatchNormalization", IMG, {"epsilon": 1e-3},
         consts={"s": f32(4), "b": f32(4), "m": f32(4), "v": pos(4)}, opset=15),
    Case("BatchNormalization", IMG, consts={"s": f32(4), "b": f32(4), "m": f32(4),
                                            "v": pos(4)}, opset=9, id="BatchNorm-opset9"),
    Case("LayerNormalization", {"x": f32(2, 3, 8)}, consts={"s": f32(8), "b": f32(8)}),
    Case("LayerNormalization", {"x": f32(2, 3, 8)}, {"axis": 1},
         consts={"s": f32(3, 8)}, outputs=3, id="LayerNorm-axis1-stats"),
    Case("InstanceNormalization", IMG, consts={"s": f32(4), "b": f32(4)}),
    Case("GroupNormalization", IMG, {"num_groups": 2}, consts={"s": f32(4), "b": f32(4)},
         opset=21),
    Case("Dropout", X, opset=13), Case("Dropout", X, opset=10, outputs=2, id="Dropout-mask",
                                   reference="onnx"),  # onnxruntime's mask is all false
]

SHAPE = [
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
    Case("GatherElements", {"x": f32(3, 4), "i": np.array([[0, -1, 2, 1]], np.int64)},
         {"axis": 0}),
    Case("Expand", {"x": f32(3, 1)}, consts={"s": i64([2, 1, 4])}),
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
]

REDUCE = [
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
    Case("ArgMax", X, {"axis": 1}),
    Case("ArgMin", {"x": np.array([[1, 3, 1], [2, 0, 0]], np.float32)},
         {"axis": 1, "keepdims": 0}, id="ArgMin-ties"),
    Case("ArgMax", {"x": np.array([[1, 3, 3], [2, 2, 0]], np.float32)},
         {"axis": 1, "select_last_index": 1}, id="ArgMax-last"),
    Case("ArgMax", {"x": np.array([[1, 3, 3], [5, 2, 0]], np.int32)}, id="ArgMax-int"),
]

OLD_OPSETS = [
    Case("Add", XY, opset=7), Case("Softmax", X, opset=7),
    Case("Gemm", {"a": f32(3, 4), "b": f32(4, 5), "c": f32(3, 5)}, opset=7),
    Case("BatchNormalization", IMG, consts={"s": f32(4), "b": f32(4), "m": f32(4),
                                            "v": pos(4)}, opset=7),
    Case("MaxPool", IMG, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=7),
    Case("AveragePool", IMG, {"kernel_shape": [2, 2], "count_include_pad": 1}, opset=7),
    Case("Reshape", X, consts={"s": i64([-1, 4])}, opset=7),
    Case("Unsqueeze", X, {"axes": [1]}, opset=7), Case("Squeeze", {"x": f32(3, 1)}, opset=7),
    Case("Slice", X, {"starts": [1], "ends": [-1]}, opset=7),
    Case("Pad", X, {"pads": [0, 0, 1, 0, 0, 2], "mode": "edge"}, opset=7),
    Case("ReduceMean", X, {"axes": [-1]}, opset=7),
    Case("Concat", {"a": f32(2, 3), "b": f32(2, 3)}, {"axis": 0}, opset=7),
    Case("Split", {"x": f32(4, 2)}, {"split": [1, 3]}, outputs=2, opset=7),
    Case("Dropout", X, opset=7), Case("Flatten", X, opset=7), Case("Transpose", X, opset=7),
]


def f16(*shape: int) -> np.ndarray:
    return f32(*shape).astype(np.float16)


HALF = [
    Case("Add", {"x": f16(2, 3), "y": f16(3)}, id="Add-f16"),
    Case("MatMul", {"a": f16(3, 4), "b": f16(4, 2)}, id="MatMul-f16"),
    Case("Softmax", {"x": f16(2, 5)}, opset=13, id="Softmax-f16"),
    Case("LayerNormalization", {"x": f16(2, 8)}, consts={"s": f16(8), "b": f16(8)},
         id="LayerNorm-f16-stash"),
    Case("ReduceSum", {"x": f16(2, 8)}, opset=13, id="ReduceSum-f16"),
    Case("Cast", {"x": f32(4)}, {"to": 10}, id="Cast-f16"),
]

ALL = ELEMENTWISE + ACTIVATIONS + LINALG + NN + SHAPE + REDUCE + OLD_OPSETS


@pytest.mark.parametrize("case", ALL, ids=str)
def test_matches_onnxruntime(case: Case) -> None:
    compare(make_model(case), case.inputs, reference=case.reference)


@pytest.mark.parametrize("case", [c for c in ALL if c.consts or not c.inputs], ids=str)
def test_converters_without_constant_folding(case: Case, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """Nodes whose inputs are all constants are folded; their converters must work too."""
    monkeypatch.setattr("nxcc.compiler.onnx.importer.fold_ops", lambda *args: {})
    compare(make_model(case), case.inputs, reference=case.reference)


@pytest.mark.parametrize("case", HALF, ids=str)
def test_float16_matches_onnxruntime(case: Case) -> None:
    compare(make_model(case), case.inputs, rtol=2e-3, atol=2e-3)
