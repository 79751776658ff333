"""Small models for the sharding tests, built with onnx.helper (no files, no torch).

- `mlp(batch, ...)`: MatMul, Add, Gelu, MatMul, Add (the Megatron MLP block);
- `gpt(layers, ...)`: a GPT-style pre-norm decoder: per layer LayerNormalization, causal
  multi-head self-attention (Q, K, V and output projections, heads split by Reshape and
  Transpose, Softmax), a residual add, LayerNormalization, a Gelu MLP and a residual add.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class _Graph:
    def __init__(self, seed: int) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def name(self, base: str) -> str:
        self.count += 1
        return f"{base}_{self.count}"

    def weight(self, base: str, shape: tuple[int, ...], scale: float = 0.2) -> str:
        name = self.name(base)
        arr = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(self, base: str, arr: np.ndarray) -> str:
        name = self.name(base)
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def node(self, op: str, inputs: list[str], **attrs: object) -> str:
        out = self.name(op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def linear(self, x: str, d_in: int, d_out: int) -> str:
        y = self.node("MatMul", [x, self.weight("w", (d_in, d_out), 1 / np.sqrt(d_in))])
        return self.node("Add", [y, self.weight("b", (d_out,), 0.1)])

    def layer_norm(self, x: str, d: int) -> str:
        scale = self.const("ln_scale", (1 + 0.1 * self.rng.standard_normal(d)).astype(np.float32))
        bias = self.const("ln_bias", (0.1 * self.rng.standard_normal(d)).astype(np.float32))
        return self.node("LayerNormalization", [x, scale, bias], axis=-1, epsilon=1e-5)

    def model(self, x: str, shape: tuple[int, ...], y: str, y_shape: tuple[int, ...],
              name: str) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, name, [helper.make_tensor_value_info(x, TensorProto.FLOAT, shape)],
            [helper.make_tensor_value_info(y, TensorProto.FLOAT, y_shape)], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
        model.ir_version = 10
        onnx.checker.check_model(model)
        return model


def mlp(batch: int = 4, d_in: int = 64, hidden: int = 256, d_out: int = 64,
        seed: int = 0) -> onnx.ModelProto:
    """x[batch, d_in] -> Linear -> Gelu -> Linear -> y[batch, d_out]."""
    g = _Graph(seed)
    h = g.node("Gelu", [g.linear("x", d_in, hidden)])
    y = g.linear(h, hidden, d_out)
    return g.model("x", (batch, d_in), y, (batch, d_out), "mlp")


def gpt(layers: int = 2, batch: int = 1, seq: int = 8, d: int = 64, heads: int = 4,
        ff: int = 256, seed: int = 0) -> onnx.ModelProto:
    """x[batch, seq, d] through `layers` pre-norm decoder layers (causal attention)."""
    g = _Graph(seed)
    dh = d // heads
    mask = np.triu(np.full((seq, seq), -1e9, np.float32), 1)
    mask_name = g.const("causal_mask", mask)
    scale = g.const("scale", np.array(1 / np.sqrt(dh), np.float32))
    split_shape = g.const("split_shape", np.array([batch, seq, heads, dh], np.int64))
    merge_shape = g.const("merge_shape", np.array([batch, seq, d], np.int64))
    x = "x"
    for _ in range(layers):
        h = g.layer_norm(x, d)
        qkv = []
        for _ in range(3):
            t = g.node("Reshape", [g.linear(h, d, d), split_shape])
            qkv.append(g.node("Transpose", [t], perm=[0, 2, 1, 3]))
        q, k, v = qkv
        kt = g.node("Transpose", [k], perm=[0, 1, 3, 2])
        scores = g.node("Mul", [g.node("MatMul", [q, kt]), scale])
        probs = g.node("Softmax", [g.node("Add", [scores, mask_name])], axis=-1)
        ctx = g.node("Transpose", [g.node("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        attn = g.linear(g.node("Reshape", [ctx, merge_shape]), d, d)
        x = g.node("Add", [x, attn])
        h = g.node("Gelu", [g.linear(g.layer_norm(x, d), d, ff)])
        x = g.node("Add", [x, g.linear(h, ff, d)])
    return g.model("x", (batch, seq, d), x, (batch, seq, d), "gpt")
