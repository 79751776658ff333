"""Generate the benchmark's large ONNX models with random weights (onnx's helper, no torch).

    python bench/make_models.py [--out DIR] [NAME ...]      (default: every model, bench/.models)

- `wide_mlp`: batch 64, 1024 -> 4096 (ReLU) -> 1024, with biases.
- `bert_base`: a BERT-base-size encoder (12 layers, hidden 768, 12 heads, FFN 3072, vocab
  30522) on input_ids int64[1, 128]: word + position embeddings, post-LayerNorm blocks, GELU
  by Erf as torch exports it; output the last hidden state f32[1, 128, 768].
- `gpt2_small`: a GPT-2-small-size decoder (12 layers, hidden 768, 12 heads, vocab 50257) on
  input_ids int64[1, 128]: pre-LayerNorm blocks, fused QKV projection split in three, causal
  mask added to the scores, GELU by tanh (GPT-2's), final LayerNorm and an untied LM head;
  output logits f32[1, 128, 50257].

Weights are standard normal times 0.02 (seeded), LayerNorm scales 1 and biases 0: the
numerics are not a trained model's, the shapes and FLOPs are. Opset 17.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DEFAULT_DIR = Path(__file__).resolve().parent / ".models"
SEQ = 128
HIDDEN, HEADS, FFN, LAYERS = 768, 12, 3072, 12


class GraphBuilder:
    """Nodes and initializers of one graph, with fresh value names."""

    def __init__(self, seed: int = 0) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.rng = np.random.default_rng(seed)
        self.count = 0

    def fresh(self, hint: str) -> str:
        self.count += 1
        return f"{hint}_{self.count}"

    def const(self, array: np.ndarray, hint: str = "c") -> str:
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, *shape: int) -> str:
        w = (self.rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(np.float32)
        return self.const(w, "w")

    def op(self, op_type: str, *inputs: str, **attrs: object) -> str:
        out = self.fresh(op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def scalar(self, value: float) -> str:
        return self.const(np.array(value, np.float32), "s")

    def linear(self, x: str, n_in: int, n_out: int) -> str:
        return self.op("Add", self.op("MatMul", x, self.weight(n_in, n_out)),
                       self.const(np.zeros(n_out, np.float32), "b"))

    def layer_norm(self, x: str) -> str:
        return self.op("LayerNormalization", x, self.const(np.ones(HIDDEN, np.float32), "g"),
                       self.const(np.zeros(HIDDEN, np.float32), "beta"), axis=-1,
                       epsilon=1e-5)

    def shape(self, *dims: int) -> str:
        return self.const(np.array(dims, np.int64), "shape")

    def model(self, inputs: list[onnx.ValueInfoProto], outputs: list[onnx.ValueInfoProto],
              name: str) -> onnx.ModelProto:
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="nxcc-bench")
        onnx.checker.check_model(m)
        return m


def wide_mlp() -> onnx.ModelProto:
    g = GraphBuilder()
    h = g.op("Relu", g.linear("x", 1024, 4096))
    y = g.linear(h, 4096, 1024)
    g.nodes.append(helper.make_node("Identity", [y], ["y"]))
    return g.model([helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 1024])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 1024])],
                   "wide_mlp")


def attention(g: GraphBuilder, q: str, k: str, v: str, mask: str | None) -> str:
    """Multi-head attention of [1, SEQ, HIDDEN] projections; [1, SEQ, HIDDEN] out."""
    heads = g.shape(1, SEQ, HEADS, HIDDEN // HEADS)
    qh = g.op("Transpose", g.op("Reshape", q, heads), perm=[0, 2, 1, 3])
    kh = g.op("Transpose", g.op("Reshape", k, heads), perm=[0, 2, 3, 1])
    vh = g.op("Transpose", g.op("Reshape", v, heads), perm=[0, 2, 1, 3])
    scores = g.op("Div", g.op("MatMul", qh, kh), g.scalar(math.sqrt(HIDDEN // HEADS)))
    if mask is not None:
        scores = g.op("Add", scores, mask)
    ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), vh)
    return g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), g.shape(1, SEQ, HIDDEN))


def gelu_erf(g: GraphBuilder, x: str) -> str:
    """x * 0.5 * (1 + erf(x / sqrt 2)), node by node as torch exports it."""
    e = g.op("Erf", g.op("Div", x, g.scalar(math.sqrt(2.0))))
    return g.op("Mul", g.op("Mul", x, g.op("Add", e, g.scalar(1.0))), g.scalar(0.5))


def gelu_tanh(g: GraphBuilder, x: str) -> str:
    """0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))), GPT-2's approximation."""
    cube = g.op("Mul", g.op("Pow", x, g.scalar(3.0)), g.scalar(0.044715))
    t = g.op("Tanh", g.op("Mul", g.op("Add", x, cube), g.scalar(math.sqrt(2 / math.pi))))
    return g.op("Mul", g.op("Mul", x, g.scalar(0.5)), g.op("Add", t, g.scalar(1.0)))


def embeddings(g: GraphBuilder, vocab: int) -> str:
    words = g.op("Gather", g.weight(vocab, HIDDEN), "input_ids", axis=0)
    return g.op("Add", words, g.weight(SEQ, HIDDEN))


def ids_input() -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, SEQ])


def bert_base() -> onnx.ModelProto:
    g = GraphBuilder(1)
    h = g.layer_norm(embeddings(g, 30522))
    for _ in range(LAYERS):
        q, k, v = (g.linear(h, HIDDEN, HIDDEN) for _ in range(3))
        h = g.layer_norm(g.op("Add", h, g.linear(attention(g, q, k, v, None), HIDDEN, HIDDEN)))
        ff = g.linear(gelu_erf(g, g.linear(h, HIDDEN, FFN)), FFN, HIDDEN)
        h = g.layer_norm(g.op("Add", h, ff))
    g.nodes.append(helper.make_node("Identity", [h], ["last_hidden_state"]))
    out = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [1, SEQ, HIDDEN])
    return g.model([ids_input()], [out], "bert_base")


def gpt2_small() -> onnx.ModelProto:
    g = GraphBuilder(2)
    vocab = 50257
    h = embeddings(g, vocab)
    causal = np.triu(np.full((SEQ, SEQ), -1e4, np.float32), k=1)
    mask = g.const(causal, "causal_mask")
    split = g.const(np.array([HIDDEN] * 3, np.int64), "split")
    for _ in range(LAYERS):
        qkv = g.linear(g.layer_norm(h), HIDDEN, 3 * HIDDEN)
        q, k, v = (g.fresh(n) for n in "qkv")
        g.nodes.append(helper.make_node("Split", [qkv, split], [q, k, v], axis=-1))
        h = g.op("Add", h, g.linear(attention(g, q, k, v, mask), HIDDEN, HIDDEN))
        ff = g.linear(gelu_tanh(g, g.linear(g.layer_norm(h), HIDDEN, FFN)), FFN, HIDDEN)
        h = g.op("Add", h, ff)
    logits = g.op("MatMul", g.layer_norm(h), g.weight(HIDDEN, vocab))
    g.nodes.append(helper.make_node("Identity", [logits], ["logits"]))
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, SEQ, vocab])
    return g.model([ids_input()], [out], "gpt2_small")


GENERATORS = {"wide_mlp": wide_mlp, "bert_base": bert_base, "gpt2_small": gpt2_small}


def ensure(name: str, directory: Path = DEFAULT_DIR) -> Path:
    """The path of generated model `name`, generating it first if it is not there."""
    path = directory / f"{name}.onnx"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        onnx.save(GENERATORS[name](), str(tmp))
        tmp.replace(path)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=", ".join(GENERATORS))
    parser.add_argument("--out", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args()
    unknown = sorted(set(args.names) - set(GENERATORS))
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {', '.join(GENERATORS)}")
    for name in args.names or GENERATORS:
        print(ensure(name, args.out))


if __name__ == "__main__":
    main()
