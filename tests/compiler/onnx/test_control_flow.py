"""If, Loop and Scan lowered to `conditional` and `while` (with the subgraphs as module
functions, outer values captured as parameters), against onnxruntime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nxcc.driver.onnx_backend as nxcc
from nxcc.compiler.onnx import import_onnx

F = TensorProto.FLOAT


def vi(name: str, elem: int, shape: list[int] | None) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, shape)


def model_of(nodes: list[onnx.NodeProto], inputs: list[onnx.ValueInfoProto],
             outputs: list[onnx.ValueInfoProto], inits: list[onnx.TensorProto] | None = None
             ) -> onnx.ModelProto:
    m = helper.make_model(helper.make_graph(nodes, "cf", inputs, outputs, inits or []),
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def check(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[str]:
    """Compare with onnxruntime; the opcodes of the compiled entry function."""
    got = nxcc.prepare(model).run(feeds)
    want = ort.InferenceSession(model.SerializeToString(),
                               providers=["CPUExecutionProvider"]).run(None, feeds)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)
    return [op.opcode for op in import_onnx(model).entry_function.body]


def if_model() -> onnx.ModelProto:
    """y = cond ? x * w : x + w, both branches capturing x and an outer constant w."""
    w = numpy_helper.from_array(np.array([1.5, -2.0, 3.0], np.float32), "w")
    then_g = helper.make_graph([helper.make_node("Mul", ["x", "w"], ["t"])], "then", [],
                               [vi("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["e"])], "else", [],
                               [vi("e", F, [3])])
    node = helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)
    return model_of([node], [vi("c", TensorProto.BOOL, []), vi("x", F, [3])],
                    [vi("y", F, [3])], [w])


@pytest.mark.parametrize("cond", [True, False])
def test_if_with_a_runtime_condition_is_a_conditional(cond: bool) -> None:
    model = if_model()
    x = np.array([1.0, 2.0, 3.0], np.float32)
    rep = nxcc.prepare(model)
    assert not rep.frozen
    ops = check(model, {"c": np.array(cond), "x": x})
    assert "conditional" in ops


def loop_model(with_cond: bool) -> onnx.ModelProto:
    """acc = acc * 0.5 + x * i for i < M (stopping once acc > limit when `with_cond`),
    with a scan output of every acc when the loop cannot stop early."""
    body_nodes = [
        helper.make_node("Cast", ["i"], ["fi"], to=F),
        helper.make_node("Mul", ["x", "fi"], ["xi"]),
        helper.make_node("Mul", ["acc_in", "half"], ["decayed"]),
        helper.make_node("Add", ["decayed", "xi"], ["acc_out"]),
    ]
    outputs = [vi("cond_out", TensorProto.BOOL, []), vi("acc_out", F, [2])]
    if with_cond:
        body_nodes += [helper.make_node("ReduceMax", ["acc_out"], ["top"], keepdims=0),
                       helper.make_node("Less", ["top", "limit"], ["cond_out"])]
    else:
        body_nodes += [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
                       helper.make_node("Identity", ["acc_out"], ["row"])]
        outputs.append(vi("row", F, [2]))
    body = helper.make_graph(body_nodes, "body", [
        vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []),
        vi("acc_in", F, [2])], outputs)
    inits = [numpy_helper.from_array(np.array(10, np.int64), "M"),
             numpy_helper.from_array(np.array(True), "go"),
             numpy_helper.from_array(np.array(0.5, np.float32), "half"),
             numpy_helper.from_array(np.array(20.0, np.float32), "limit")]
    outs = ["acc"] + ([] if with_cond else ["rows"])
    node = helper.make_node("Loop", ["M", "go", "acc0"], outs, body=body)
    graph_out = [vi("acc", F, [2])] + ([] if with_cond else [vi("rows", F, [10, 2])])
    return model_of([node], [vi("x", F, [2]), vi("acc0", F, [2])], graph_out, inits)


@pytest.mark.parametrize("with_cond", [False, True])
def test_loop_is_a_while(with_cond: bool) -> None:
    feeds = {"x": np.array([1.0, -0.5], np.float32), "acc0": np.array([2.0, 3.0], np.float32)}
    ops = check(loop_model(with_cond), feeds)
    assert "while" in ops


def scan_model() -> onnx.ModelProto:
    """Running sum over axis 1 of xs reversed, and over axis 0 of ys forward, with scan
    outputs written along axis 1 (reversed) and axis 0."""
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "a"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "b"], ["o1"]),
         helper.make_node("Identity", ["s_out"], ["o2"])],
        "body", [vi("s_in", F, [3]), vi("a", F, [3]), vi("b", F, [3])],
        [vi("s_out", F, [3]), vi("o1", F, [3]), vi("o2", F, [3])])
    node = helper.make_node("Scan", ["s0", "xs", "ys"], ["s", "z1", "z2"], body=body,
                            num_scan_inputs=2, scan_input_axes=[1, 0],
                            scan_input_directions=[1, 0], scan_output_axes=[1, 0],
                            scan_output_directions=[1, 0])
    return model_of([node], [vi("s0", F, [3]), vi("xs", F, [3, 4]), vi("ys", F, [4, 3])],
                    [vi("s", F, [3]), vi("z1", F, [3, 4]), vi("z2", F, [4, 3])])


def test_scan_axes_and_directions() -> None:
    rng = np.random.default_rng(0)
    feeds = {"s0": rng.standard_normal(3).astype(np.float32),
             "xs": rng.standard_normal((3, 4)).astype(np.float32),
             "ys": rng.standard_normal((4, 3)).astype(np.float32)}
    assert "while" in check(scan_model(), feeds)
