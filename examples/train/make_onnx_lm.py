"""Write `tiny_lm.onnx`: a small next-token model as an ONNX file, for `onnx_lm.yaml`.

It stands for a model exported from a framework: token ids [batch, seq] (int64, both dims
dynamic) -> embedding (Gather) -> a residual MLP block (MatMul, Add, Tanh) -> layer norm ->
logits [batch, seq, 256] (byte-level vocabulary, as the example corpus). Weights are drawn
from a fixed seed with onnx's helper, so nothing is downloaded. Run from anywhere:

    python examples/train/make_onnx_lm.py
"""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB, HIDDEN, FFN = 256, 32, 64


def build() -> onnx.ModelProto:
    """The model (see the module docstring)."""
    rng = np.random.default_rng(0)

    def init(name: str, *shape: int, std: float = 0.02) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * std).astype(np.float32),
                                       name)

    inits = [init("embed", VOCAB, HIDDEN), init("w1", HIDDEN, FFN), init("b1", FFN),
             init("w2", FFN, HIDDEN), init("b2", HIDDEN),
             numpy_helper.from_array(np.ones(HIDDEN, np.float32), "ln_scale"),
             numpy_helper.from_array(np.zeros(HIDDEN, np.float32), "ln_bias"),
             init("head", HIDDEN, VOCAB)]
    nodes = [
        helper.make_node("Gather", ["embed", "input_ids"], ["x"]),
        helper.make_node("MatMul", ["x", "w1"], ["h1"]),
        helper.make_node("Add", ["h1", "b1"], ["h2"]),
        helper.make_node("Tanh", ["h2"], ["h3"]),
        helper.make_node("MatMul", ["h3", "w2"], ["h4"]),
        helper.make_node("Add", ["h4", "b2"], ["h5"]),
        helper.make_node("Add", ["x", "h5"], ["r"]),
        helper.make_node("LayerNormalization", ["r", "ln_scale", "ln_bias"], ["n"],
                         axis=-1, epsilon=1e-5),
        helper.make_node("MatMul", ["n", "head"], ["logits"]),
    ]
    graph = helper.make_graph(
        nodes, "tiny_lm",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "seq"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       ["batch", "seq", VOCAB])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="nxcc-examples")
    onnx.checker.check_model(model)
    return model


def main() -> None:
    onnx.save(build(), os.path.join(HERE, "tiny_lm.onnx"))


if __name__ == "__main__":
    main()
