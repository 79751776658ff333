"""The ONNX frontend: committed PyTorch exports, input shapes, constant folding, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nxcc.compiler.onnx import SUPPORTED_OPS, FrontendError, import_onnx
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.ir.verifier import verify_module
from tests.compiler.onnx.helpers import compare, run_module
from tests.paths import REPO

MODELS = REPO / "tests/e2e/models"
ALL_MODELS = sorted(MODELS.glob("*.onnx"))

EXPECTED_OPS = {
    "mlp": ["dot_general", "erf", "reduce", "exp", "divide"],
    "cnn": ["convolution", "reduce_window", "maximum", "dot_general", "reduce"],
}

REQUIRED = """Add Sub Mul Div Pow Neg Abs Sqrt Exp Log Erf Tanh Sigmoid Relu LeakyRelu Elu Selu
Gelu Softmax LogSoftmax Clip Min Max Sum Mean Equal Less Greater LessOrEqual GreaterOrEqual Not
And Or Where Cast Identity Dropout MatMul Gemm Conv ConvTranspose BatchNormalization
LayerNormalization InstanceNormalization MaxPool AveragePool GlobalAveragePool GlobalMaxPool
Flatten Reshape Transpose Squeeze Unsqueeze Concat Split Slice Gather Shape Size Expand
ConstantOfShape Range ReduceMean ReduceSum ReduceMax ReduceMin ReduceProd ReduceL2 ArgMax
ArgMin Pad Tile Floor Ceil Reciprocal Sign Constant""".split()


def model_inputs(path: Path, batch: int | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    model = onnx.load(str(path))
    rng = np.random.default_rng(seed)
    dims = [d.dim_value or batch for d in model.graph.input[0].type.tensor_type.shape.dim]
    return {model.graph.input[0].name: rng.standard_normal(dims).astype(np.float32)}


def tensor_model(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
                 outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] = (),
                 opset: int = 17) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return model


def fvi(name: str, shape: list[int | str], elem: int = TensorProto.FLOAT
        ) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def error_of(model: onnx.ModelProto | str | Path, **kw: object) -> FrontendError:
    with pytest.raises(FrontendError) as info:
        import_onnx(model, **kw)  # type: ignore[arg-type]
    err = info.value
    assert "\n" not in str(err)
    return err


# -- committed models --------------------------------------------------------------------

@pytest.mark.parametrize("path", ALL_MODELS, ids=lambda p: p.stem)
def test_model_imports_and_verifies(path: Path) -> None:
    shapes = {"x": (4, 16)} if "dynbatch" in path.name else None
    module = import_onnx(path, shapes)
    verify_module(module)
    fn = module.entry_function
    assert [p.name for p in fn.params] == ["x"]
    assert fn.result_names == ["y"]
    text = print_module(module)
    for opcode in EXPECTED_OPS[path.stem.split("_")[0]]:
        assert f" = {opcode}(" in text, opcode
    parse_module(text)  # the printed module reads back


@pytest.mark.parametrize("path", [p for p in ALL_MODELS if "dynbatch" not in p.name],
                         ids=lambda p: p.stem)
def test_model_matches_onnxruntime(path: Path) -> None:
    compare(onnx.load(str(path)), model_inputs(path))


def test_batchnorm_model_keeps_batchnorm_as_elementwise(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr("nxcc.compiler.onnx.importer.fold_ops", lambda *args: {})
    module = import_onnx(MODELS / "cnn_bn_ts17.onnx")
    text = print_module(module)
    assert "rsqrt(" in text and text.count("convolution(") == 2


def test_batchnorm_statistics_fold_at_import() -> None:
    """With folding (the default), rsqrt(var + eps) of the constant statistics is computed
    at import, with the kernels: no rsqrt op is left."""
    text = print_module(import_onnx(MODELS / "cnn_bn_ts17.onnx"))
    assert "rsqrt(" not in text and text.count("convolution(") == 2


@pytest.mark.parametrize("batch", [1, 3])
def test_dynamic_batch_with_input_shapes(batch: int) -> None:
    path = MODELS / "mlp_dynbatch_ts17.onnx"
    module = compare(onnx.load(str(path)), model_inputs(path, batch), {"x": (batch, 16)})
    assert module.entry_function.params[0].type.shape == (batch, 16)
    assert module.entry_function.results[0].type.shape == (batch, 10)


def test_dynamic_dimension_without_input_shape() -> None:
    err = error_of(MODELS / "mlp_dynbatch_ts17.onnx")
    assert err.code == "NCC_EMOD025"
    assert str(err) == ("input 'x' has a dynamic dimension 0 ('batch'); give its size with "
                        "--input-shape x=D0,D1,...")


@pytest.mark.parametrize("shapes, fragment", [
    ({"x": (4,)}, "has rank 1 but input 'x' has rank 2"),
    ({"x": (4, 15)}, "dimension 1 of input 'x' is fixed to 16"),
    ({"nope": (4, 16)}, "'nope', which is not an input of the model (inputs: x)"),
    ({"x": (4, -1)}, "must be a list of sizes >= 0"),
])
def test_bad_input_shapes(shapes: dict, fragment: str) -> None:
    err = error_of(MODELS / "mlp_dynbatch_ts17.onnx", input_shapes=shapes)
    assert err.code == "NCC_EARG001"
    assert fragment in str(err)


def test_static_input_accepts_matching_shape() -> None:
    module = import_onnx(MODELS / "mlp_ts17.onnx", {"x": (4, 16)})
    assert module.entry_function.params[0].type.shape == (4, 16)


# -- errors ------------------------------------------------------------------------------

def test_unsupported_operator() -> None:
    model = tensor_model([helper.make_node("Relu", ["x"], ["r"], name="ok"),
                          helper.make_node("Multinomial", ["r"], ["y"], name="rnd_1")],
                         [fvi("x", [3, 3])], [fvi("y", [3, 3])], opset=17)
    err = error_of(model)
    assert err.code == "NCC_EUOC002"
    assert str(err) == "unsupported ONNX operator 'Multinomial' (node 'rnd_1', opset 17)"


def test_unsupported_operator_of_another_domain() -> None:
    node = helper.make_node("Foo", ["x"], ["y"], name="f", domain="com.example")
    graph = helper.make_graph([node], "t", [fvi("x", [2])], [fvi("y", [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.example", 1)])
    err = error_of(model)
    assert (err.code, str(err)) == (
        "NCC_EUOC002", "unsupported ONNX operator 'com.example.Foo' (node 'f', opset 1)")


def test_first_unsupported_operator_wins_before_shape_errors() -> None:
    model = tensor_model([helper.make_node("Multinomial", ["x"], ["y"])],
                         [fvi("x", ["n", 3, 3])], [fvi("y", ["n", 3, 3])])
    err = error_of(model)
    assert err.code == "NCC_EUOC002" and "node '#0'" in str(err)


def test_malformed_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not an onnx protobuf\xff\xfe")
    err = error_of(bad)
    assert err.code == "NCC_EFRM001" and str(bad) in str(err)


def test_missing_file(tmp_path: Path) -> None:
    err = error_of(tmp_path / "nope.onnx")
    assert err.code == "NCC_EFRM001" and "no such file" in str(err)


def test_checker_failure_is_one_line() -> None:
    node = helper.make_node("Relu", ["x"], ["y"])
    model = tensor_model([node], [fvi("x", [2])], [fvi("y", [2])])
    model.graph.node.append(helper.make_node("Relu", ["undefined"], ["z"]))
    err = error_of(model)
    assert err.code == "NCC_EFRM001" and "not a valid ONNX model" in str(err)


def test_unsupported_element_type() -> None:
    model = tensor_model([helper.make_node("Identity", ["s"], ["y"])],
                         [fvi("s", [2], TensorProto.STRING)], [fvi("y", [2], TensorProto.STRING)])
    err = error_of(model)
    assert err.code == "NCC_EDTY001" and "input 's'" in str(err) and "STRING" in str(err)


def test_shape_input_must_be_constant() -> None:
    model = tensor_model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                         [fvi("x", [2, 3]), fvi("s", [2], TensorProto.INT64)], [fvi("y", ["a", "b"])])
    err = error_of(model)
    assert err.code == "NCC_EMOD025"
    assert "node 'r' (Reshape): input 1 ('shape') must be known at compile time" in str(err)


def test_maxpool_indices_match_onnxruntime() -> None:
    """The Indices output: flat positions of each window's first maximum (with padding,
    strides and a tie in the input)."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                            strides=[2, 2], name="mp")
    model = tensor_model([node], [fvi("x", [2, 3, 5, 6])],
                         [fvi("y", [2, 3, 3, 3]), fvi("i", [2, 3, 3, 3], TensorProto.INT64)])
    x = np.random.default_rng(0).standard_normal((2, 3, 5, 6)).astype(np.float32)
    x[0, 0, :2, :2] = 5.0  # a tie: the first maximum wins
    compare(model, {"x": x})


def test_batchnorm_training_mode_matches_the_reference() -> None:
    """training_mode=1: batch statistics normalize; the running statistics are updated."""
    rng = np.random.default_rng(1)
    inits = [numpy_helper.from_array(rng.uniform(0.5, 1.5, 2).astype(np.float32), n)
             for n in "sbmv"]
    node = helper.make_node("BatchNormalization", ["x", *"sbmv"], ["y", "rm", "rv"],
                            training_mode=1, momentum=0.8)
    model = tensor_model([node], [fvi("x", [3, 2, 4])],
                         [fvi("y", [3, 2, 4]), fvi("rm", [2]), fvi("rv", [2])], inits)
    compare(model, {"x": rng.standard_normal((3, 2, 4)).astype(np.float32)},
            reference="onnx")


# -- conversion details ------------------------------------------------------------------

def test_shape_chain_folds_to_a_static_reshape() -> None:
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape, as PyTorch's x.view(x.size(0), -1)."""
    c = {n: numpy_helper.from_array(v, n) for n, v in
         {"zero": np.array(0, np.int64), "ax": np.array([0], np.int64),
          "minus1": np.array([-1], np.int64)}.items()}
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "zero"], ["n"], axis=0),
             helper.make_node("Unsqueeze", ["n", "ax"], ["n1"]),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], axis=0),
             helper.make_node("Reshape", ["x", "target"], ["y"])]
    model = tensor_model(nodes, [fvi("x", ["batch", 3, 4])], [fvi("y", ["batch", 12])],
                         list(c.values()))
    feeds = {"x": np.random.default_rng(1).standard_normal((5, 3, 4)).astype(np.float32)}
    module = compare(model, feeds, {"x": (5, 3, 4)})
    assert [op.opcode for op in module.entry_function.body].count("reshape") == 1
    assert module.entry_function.results[0].type.shape == (5, 12)


def test_names_with_any_characters_survive_printing() -> None:
    nodes = [helper.make_node("Relu", ["input:0 (x)"], ["out/relu 1"]),
             helper.make_node("Neg", ["out/relu 1"], ["y.0"])]
    model = tensor_model(nodes, [fvi("input:0 (x)", [2])], [fvi("y.0", [2]),
                                                           fvi("out/relu 1", [2])])
    module = import_onnx(model)
    fn = module.entry_function
    assert fn.params[0].name == "input:0 (x)"
    assert fn.result_names == ["y.0", "out/relu 1"]
    again = parse_module(print_module(module))
    assert again.entry_function.params[0].name == "input:0 (x)"
    got = run_module(module, {"input:0 (x)": np.array([-1, 2], np.float32)})
    assert got["y.0"].tolist() == [0, -2] and got["out/relu 1"].tolist() == [0, 2]


def test_initializer_listed_as_input_is_a_constant() -> None:
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32).reshape(2, 2), "w")
    model = tensor_model([helper.make_node("MatMul", ["x", "w"], ["y"])],
                         [fvi("x", [1, 2]), fvi("w", [2, 2])], [fvi("y", [1, 2])], [w])
    fn = import_onnx(model).entry_function
    assert [p.name for p in fn.params] == ["x"]
    assert fn.body[0].opcode == "constant" and fn.body[0].result.name == "w"


def test_unused_initializers_emit_nothing() -> None:
    unused = numpy_helper.from_array(np.zeros((100, 100), np.float32), "unused")
    model = tensor_model([helper.make_node("Relu", ["x"], ["y"])], [fvi("x", [2])],
                         [fvi("y", [2])], [unused])
    assert [op.opcode for op in import_onnx(model).entry_function.body] == ["constant",
                                                                             "maximum"]


def test_model_from_path_string_and_proto_agree() -> None:
    path = MODELS / "mlp_ts13.onnx"
    a = print_module(import_onnx(str(path)))
    b = print_module(import_onnx(onnx.load(str(path))))
    assert a == b


def test_supported_ops_cover_the_required_set() -> None:
    assert SUPPORTED_OPS == sorted(SUPPORTED_OPS)
    missing = [op for op in REQUIRED if op not in SUPPORTED_OPS]
    assert not missing, missing
