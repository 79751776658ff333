"""RNN, GRU and LSTM (lowered to `while` loops) against onnxruntime, over the attributes
the node suite leaves out: directions, sequence_lens, batch-first layout, biases, initial
states, GRU's linear_before_reset, LSTM peepholes and clip."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nxcc.driver.onnx_backend as nxcc

T, B, IN, H = 5, 3, 4, 6  # steps, batch, input size, hidden size
GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


def case(op: str, direction: str, layout: int, lens: bool, **attrs: object
         ) -> tuple[object, dict[str, np.ndarray]]:
    """The model and its feeds; the random data does not depend on `layout` (batch-first
    tensors are the time-first ones transposed)."""
    rng = np.random.default_rng(sum(map(ord, op + direction)) + lens)
    d = 2 if direction == "bidirectional" else 1
    g = GATES[op]
    arrays = {
        "X": rng.standard_normal((T, B, IN)), "W": rng.standard_normal((d, g * H, IN)) * 0.5,
        "R": rng.standard_normal((d, g * H, H)) * 0.5, "B": rng.standard_normal((d, 2 * g * H)),
        "L": np.array([T, 2, 4], np.int32) if lens else None,
        "H0": rng.standard_normal((d, B, H)),
    }
    names = ["X", "W", "R", "B", "L" if lens else "", "H0"]
    if op == "LSTM":
        arrays["C0"] = rng.standard_normal((d, B, H))
        arrays["P"] = rng.standard_normal((d, 3 * H))
        names += ["C0", "P"]
    feeds = {k: (v if k == "L" else v.astype(np.float32)) for k, v in arrays.items()
             if v is not None}
    if layout:
        feeds = {k: (v.transpose(1, 0, 2) if k in ("X", "H0", "C0") else v)
                 for k, v in feeds.items()}
    outs = ["Y", "Y_h"] + (["Y_c"] if op == "LSTM" else [])
    node = helper.make_node(op, names, outs, direction=direction, hidden_size=H, layout=layout,
                            **attrs)
    inputs = [helper.make_tensor_value_info(k, TensorProto.INT32 if k == "L" else
                                            TensorProto.FLOAT, v.shape) for k, v in feeds.items()]
    state = (B, d, H) if layout else (d, B, H)
    outputs = [helper.make_tensor_value_info("Y", TensorProto.FLOAT,
                                             (B, T, d, H) if layout else (T, d, B, H))] + [
        helper.make_tensor_value_info(o, TensorProto.FLOAT, state) for o in outs[1:]]
    model = helper.make_model(helper.make_graph([node], op, inputs, outputs),
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    return model, feeds


@pytest.mark.parametrize("op", ["RNN", "GRU", "LSTM"])
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("layout", [0, 1])
@pytest.mark.parametrize("lens", [False, True])
def test_recurrent_matches_onnxruntime(op: str, direction: str, layout: int, lens: bool
                                       ) -> None:
    """Batch-first (layout 1) results are compared with onnxruntime's time-first ones
    (onnxruntime does not implement layout 1)."""
    extra: dict[str, object] = {}
    if op == "GRU":
        extra["linear_before_reset"] = 1 if direction != "forward" else 0
    if op == "LSTM" and direction == "bidirectional":
        extra["clip"] = 1.5
    model, feeds = case(op, direction, layout, lens, **extra)
    got = nxcc.prepare(model).run(list(feeds.values()))
    ref_model, ref_feeds = case(op, direction, 0, lens, **extra)
    sess = ort.InferenceSession(ref_model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    want = sess.run(None, ref_feeds)
    if layout:
        want = [want[0].transpose(2, 0, 1, 3), *[w.transpose(1, 0, 2) for w in want[1:]]]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("name", "shape"), [("C0", (1, B, 2 * H)), ("H0", (B, 1, H)),
                                             ("P", (1, 2 * H)), ("B", (1, 4 * H))])
def test_an_input_of_the_wrong_shape_is_refused_naming_it(name: str, shape: tuple) -> None:
    """As onnxruntime refuses it ('Input initial_c must have shape {1,3,6}'): PyTorch's
    dynamo exporter writes an LSTM with projections as one whose initial_c is the cell's
    size, not hidden_size."""
    model, feeds = case("LSTM", "forward", 0, False)
    feeds[name] = np.zeros(shape, np.float32)
    for value in model.graph.input:
        if value.name == name:
            value.CopyFrom(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    spec = {"C0": "initial_c", "H0": "initial_h", "P": "P", "B": "B"}[name]
    with pytest.raises(Exception, match=rf"input {spec} must have shape \[") as info:
        nxcc.prepare(model)
    assert f"got {list(shape)}" in str(info.value)
