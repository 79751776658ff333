"""A small stage module built by hand with the IR builder, for testing the engine alone.

The model: one-hot embedding E [V, H] -> L residual blocks x + AR(tanh(x W1) W2) with W1
column-parallel and W2 row-parallel over the TP group (the all-reduce explicit in the IR,
group-local replica groups) -> logits y Wout [H, V] -> summed cross-entropy. Every backward
is written by hand (so the tests need no gradient rule for collectives) and recomputes its
stage's forward from the stage input, as the engine's contract says. `numpy_losses` trains
the same model in numpy, as the reference.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nxcc.driver.train.stage import StageBuild, StagePlan
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.losses import reduce_all

F32 = DType.F32


@dataclass(frozen=True)
class Toy:
    vocab: int = 16
    hidden: int = 8
    ffn: int = 12
    layers: int = 4

    def full_weights(self, seed: int) -> dict[str, np.ndarray]:
        rng = np.random.default_rng(seed)
        w = {"E": rng.normal(0, 0.5, (self.vocab, self.hidden))}
        for i in range(self.layers):
            w[f"W1_{i}"] = rng.normal(0, 0.4, (self.hidden, self.ffn))
            w[f"W2_{i}"] = rng.normal(0, 0.4, (self.ffn, self.hidden))
        w["Wout"] = rng.normal(0, 0.5, (self.hidden, self.vocab))
        return {k: v.astype(np.float32) for k, v in w.items()}


def _dot(b: Builder, x: Value, y: Value, cx: int, cy: int) -> Value:
    return b.dot_general(x, y, lhs_contracting_dims=(cx,), rhs_contracting_dims=(cy,))


def _one_hot(b: Builder, ids: Value, classes: int) -> Value:
    n = ids.type.shape[0]
    iota = b.iota(dtype=ids.type.dtype, shape=(n, classes), dimension=1)
    wide = b.broadcast_in_dim(ids, shape=(n, classes), broadcast_dimensions=(0,))
    return b.convert(b.compare(iota, wide, direction="EQ"), F32)


class _Writer:
    """Emits the forward and backward pieces of one stage into a function."""

    def __init__(self, b: Builder, tp: int) -> None:
        self.b = b
        self.groups = [list(range(tp))]

    def layers(self, x: Value, ws: list[tuple[Value, Value]]) -> tuple[Value, list]:
        b, saved = self.b, []
        for w1, w2 in ws:
            a = b.tanh(_dot(b, x, w1, 1, 0))
            saved.append((x, a))
            x = b.add(x, b.all_reduce(_dot(b, a, w2, 1, 0), reduction="sum",
                                      replica_groups=self.groups))
        return x, saved

    def layers_back(self, gy: Value, ws: list[tuple[Value, Value]], saved: list
                    ) -> tuple[Value, list[Value]]:
        b, grads = self.b, []
        for (w1, w2), (x, a) in reversed(list(zip(ws, saved, strict=True))):
            ga = _dot(b, gy, w2, 1, 1)
            gw2 = _dot(b, a, gy, 0, 0)
            gh = b.multiply(ga, b.subtract(b.splat(1.0, a.type), b.multiply(a, a)))
            gw1 = _dot(b, x, gh, 0, 0)
            gx = b.all_reduce(_dot(b, gh, w1, 1, 1), reduction="sum",
                              replica_groups=self.groups)
            gy = b.add(gy, gx)
            grads[:0] = [gw1, gw2]
        return gy, grads


def build_toy_stage(toy: Toy, seed: int, plan: StagePlan) -> StageBuild:
    full = toy.full_weights(seed)
    per = toy.layers // plan.stages
    mine = range(plan.stage * per, (plan.stage + 1) * per)
    f = toy.ffn // plan.tp_size
    cut = slice(plan.tp_rank * f, (plan.tp_rank + 1) * f)
    params: list[tuple[str, np.ndarray]] = []
    if plan.first:
        params.append(("E", full["E"]))
    for i in mine:
        params += [(f"W1_{i}", full[f"W1_{i}"][:, cut].copy()),
                   (f"W2_{i}", full[f"W2_{i}"][cut].copy())]
    if plan.last:
        params.append(("Wout", full["Wout"]))
    n = plan.micro_batch * plan.seq_length
    module = Module(f"toy_s{plan.stage}")
    for name in (["forward_backward"] if plan.last else ["forward", "backward"]):
        _function(module, name, toy, plan, params, n)
    return StageBuild(module, params, replicated=frozenset({"E", "Wout"}))


def _function(module: Module, name: str, toy: Toy, plan: StagePlan,
              params: list[tuple[str, np.ndarray]], n: int) -> None:
    pv = [Value(TensorType(F32, a.shape), k) for k, a in params]
    ids_t = TensorType(DType.S32, (plan.micro_batch, plan.seq_length))
    x_in = Value(ids_t if plan.first else TensorType(F32, (n, toy.hidden)), "x_in")
    extra = {"forward": [], "backward": [Value(TensorType(F32, (n, toy.hidden)), "g_out")],
             "forward_backward": [Value(ids_t, "labels")]}[name]
    fn = module.add_function(Function(name, [*pv, x_in, *extra]))
    b, w = Builder(module, fn), _Writer(Builder(module, fn), plan.tp_size)
    by = dict(zip((k for k, _ in params), pv, strict=True))
    ws = [(by[k], by[k.replace("W1", "W2")]) for k, _ in params if k.startswith("W1")]
    if plan.first:
        hot = _one_hot(b, b.reshape(x_in, (n,)), toy.vocab)
        x = _dot(b, hot, by["E"], 1, 0)
    else:
        x = x_in
    y, saved = w.layers(x, ws)
    if name == "forward":
        fn.results = [y]
        return
    if name == "backward":
        gy = extra[0]
        head: list[Value] = []
    else:
        logits = _dot(b, y, by["Wout"], 1, 0)
        top = reduce_all(b, logits, ops.maximum, (1,))
        shifted = b.subtract(logits, b.broadcast_in_dim(top, shape=(n, toy.vocab),
                                                        broadcast_dimensions=(0,)))
        e = b.exp(shifted)
        total = reduce_all(b, e, ops.add, (1,))
        lse = b.log(total)
        hot_l = _one_hot(b, b.reshape(extra[0], (n,)), toy.vocab)
        picked = reduce_all(b, b.multiply(hot_l, shifted), ops.add, (1,))
        loss = reduce_all(b, b.subtract(lse, picked))
        probs = b.divide(e, b.broadcast_in_dim(total, shape=(n, toy.vocab),
                                               broadcast_dimensions=(0,)))
        gl = b.subtract(probs, hot_l)
        gy = _dot(b, gl, by["Wout"], 1, 1)
        head = [loss, b.constant(np.float32(n))]
        tail_grads = [_dot(b, y, gl, 0, 0)]
    gx, grads = w.layers_back(gy, ws, saved)
    if plan.first:
        grads.insert(0, _dot(b, hot, gx, 0, 0))
        g_in: list[Value] = []
    else:
        g_in = [gx]
    if name == "forward_backward":
        grads += tail_grads
    fn.results = [*head, *g_in, *grads]


def numpy_losses(toy: Toy, seed: int, batches: list[np.ndarray], lr: float, wd: float,
                 clip: float | None = None, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8) -> list[float]:
    """The same model trained in float64 numpy with AdamW at a constant lr, gradients
    clipped to a global norm of `clip`: the mean loss of each step (`batches[k]` the
    [G, S+1] tokens of step k)."""
    w = {k: v.astype(np.float64) for k, v in toy.full_weights(seed).items()}
    m = {k: np.zeros_like(v) for k, v in w.items()}
    v2 = {k: np.zeros_like(v) for k, v in w.items()}
    losses = []
    for t, batch in enumerate(batches, start=1):
        ids, labels = batch[:, :-1].reshape(-1), batch[:, 1:].reshape(-1)
        x = w["E"][ids]
        saved = []
        for i in range(toy.layers):
            a = np.tanh(x @ w[f"W1_{i}"])
            saved.append((x, a))
            x = x + a @ w[f"W2_{i}"]
        logits = x @ w["Wout"]
        shifted = logits - logits.max(1, keepdims=True)
        p = np.exp(shifted) / np.exp(shifted).sum(1, keepdims=True)
        n = len(ids)
        losses.append(float(-np.log(p[np.arange(n), labels]).mean()))
        p[np.arange(n), labels] -= 1
        gl = p / n
        g = {"Wout": x.T @ gl}
        gy = gl @ w["Wout"].T
        for i in reversed(range(toy.layers)):
            xi, a = saved[i]
            g[f"W2_{i}"] = a.T @ gy
            gh = (gy @ w[f"W2_{i}"].T) * (1 - a * a)
            g[f"W1_{i}"] = xi.T @ gh
            gy = gy + gh @ w[f"W1_{i}"].T
        g["E"] = np.zeros_like(w["E"])
        np.add.at(g["E"], ids, gy)
        norm = np.sqrt(sum(float((x * x).sum()) for x in g.values()))
        if clip is not None:
            g = {k: x * min(1.0, clip / (norm + 1e-6)) for k, x in g.items()}
        for k in w:
            w[k] *= 1 - lr * wd
            m[k] = betas[0] * m[k] + (1 - betas[0]) * g[k]
            v2[k] = betas[1] * v2[k] + (1 - betas[1]) * g[k] ** 2
            mh, vh = m[k] / (1 - betas[0] ** t), v2[k] / (1 - betas[1] ** t)
            w[k] -= lr * mh / (np.sqrt(vh) + eps)
    return losses
