"""The parallel primitives give one rank's numbers on TP ranks: a model using every layer and
region helper has the loss of its numpy reference on one rank, and the same loss and whole
gradients on TP2 with and without sequence parallelism, cut into pipeline stages or not,
with each recomputation; finite differences check one rank's gradients."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nxcc import nxd
from nxcc.ir.core import Value
from tests.nxd.helpers import run_model, whole_weights

B, S, F, H, V = 2, 4, 8, 12, 6


def probe(m: nxd.Model) -> tuple[Value, Value]:
    """Every primitive: an embedding and a scattered input in the sequence-parallel region,
    a column/row pair there, a gathered column layer, a row layer splitting its input, the
    tensor-parallel region helpers, and a vocabulary-parallel head and loss."""
    b = m.b
    x = m.input("x", (S, F), "float32")
    ids = m.input("ids", (S,), "int32")
    labels = m.input("labels", (S,), "int32")
    e = nxd.ParallelEmbedding(m, "emb", V, F, sequence_parallel_enabled=True)(ids)
    h = b.add(nxd.scatter_to_sequence_parallel_region(m, x), e)
    h = nxd.LayerNorm(m, "ln", F)(h)
    up = nxd.ColumnParallelLinear(m, "up", F, H, gather_output=False,
                                  sequence_parallel_enabled=True)
    down = nxd.RowParallelLinear(m, "down", H, F, input_is_parallel=True,
                                 sequence_parallel_enabled=True)
    with nxd.checkpoint(m, "full"):
        h = b.add(h, down(nxd.gelu(m, up(h))))
    nxd.pipeline_cut(m, "block")
    whole = nxd.gather_from_sequence_parallel_region(m, h, to_model_parallel=False)
    g = nxd.ColumnParallelLinear(m, "gathered", F, F, gather_output=True)(whole)
    g = nxd.RMSNorm(m, "rms", F)(g)
    r = nxd.RowParallelLinear(m, "split_in", F, F, input_is_parallel=False)(g)
    w = m.parameter("local_w", (F, F), axis=1)  # [F, F / TP]
    c = nxd.matmul(m, nxd.copy_to_tensor_model_parallel_region(m, r), w)
    c = nxd.gather_from_tensor_model_parallel_region(m, nxd.silu(m, c))
    t = nxd.scatter_to_tensor_model_parallel_region(m, c)  # [B, S, F / TP]
    w2 = m.parameter("row_w", (F, F), axis=0)
    c = b.add(c, nxd.reduce_from_tensor_model_parallel_region(m, nxd.matmul(m, t, w2)))
    with nxd.checkpoint(m, "selective"):
        c = b.add(c, nxd.softmax(m, c))
    logits = nxd.ColumnParallelLinear(m, "head", F, V, bias=False, gather_output=False)(c)
    return nxd.parallel_cross_entropy(m, logits, labels)


def _batch(seed: int = 3) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, V, (B, S)).astype(np.int32)
    labels[1, 2] = -100
    return {"x": rng.normal(0, 1, (B, S, F)).astype(np.float32),
            "ids": rng.integers(0, V, (B, S)).astype(np.int32), "labels": labels}


def _reference(w: dict[str, np.ndarray], d: dict[str, np.ndarray]) -> float:
    w = {k: v.astype(np.float64) for k, v in w.items()}

    def ln(x: np.ndarray, name: str) -> np.ndarray:
        x = x - x.mean(-1, keepdims=True)
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-5) * w[f"{name}.weight"] + \
            w[f"{name}.bias"]

    def gelu(u: np.ndarray) -> np.ndarray:
        return 0.5 * u * (1 + np.tanh(math.sqrt(2 / math.pi) * (u + 0.044715 * u ** 3)))

    h = ln(d["x"] + w["emb"][d["ids"]], "ln")
    h = h + gelu(h @ w["up"] + w["up_bias"]) @ w["down"] + w["down_bias"]
    g = h @ w["gathered"] + w["gathered_bias"]
    g = g / np.sqrt((g * g).mean(-1, keepdims=True) + 1e-5) * w["rms.weight"]
    c = g @ w["split_in"] + w["split_in_bias"]
    c = c @ w["local_w"]
    c = c / (1 + np.exp(-c))
    c = c + c @ w["row_w"]
    e = np.exp(c - c.max(-1, keepdims=True))
    c = c + e / e.sum(-1, keepdims=True)
    logits = c @ w["head"]
    top = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
    keep = d["labels"] != -100
    picked = np.take_along_axis(logits, np.where(keep, d["labels"], 0)[..., None], -1)[..., 0]
    return float(((lse - picked) * keep).sum())


@pytest.fixture(scope="module")
def one_rank() -> tuple[dict, dict, tuple]:
    full, data = whole_weights(probe, 0, scale=10.0), _batch()
    return full, data, run_model(probe, full, data)


def test_one_rank_matches_numpy(one_rank: tuple) -> None:
    full, data, (loss, count, _) = one_rank
    assert count == B * S - 1
    assert loss == pytest.approx(_reference(full, data), rel=1e-5)


@pytest.mark.parametrize(("sp", "cuts", "recompute"), [
    (False, (), "none"), (True, (), "full"), (False, (1,), "selective"), (True, (1,), "none")])
def test_tp2_gives_one_ranks_loss_and_gradients(one_rank: tuple, sp: bool, cuts: tuple,
                                                recompute: str) -> None:
    full, data, (loss1, count1, grads1) = one_rank
    loss, count, grads = run_model(probe, full, data, tp=2, sp=sp, cuts=cuts,
                                   recompute=recompute)
    assert count == count1
    assert loss == pytest.approx(loss1, rel=1e-5)
    assert grads.keys() == grads1.keys()
    for name, g in grads1.items():
        np.testing.assert_allclose(grads[name], g, rtol=0,
                                   atol=1e-5 * float(np.abs(g).max()) + 1e-7, err_msg=name)


def test_one_ranks_gradients_match_finite_differences(one_rank: tuple) -> None:
    full, data, (_, _, grads) = one_rank
    eps = 1e-3
    for name, index in [("ln.weight", (3,)), ("up", (1, 2)), ("gathered_bias", (5,)),
                        ("local_w", (0, 7)), ("row_w", (4, 1)), ("emb", (2, 3))]:
        if name == "emb" and not (data["ids"] == index[0]).any():
            continue
        bumped = []
        for sign in (1, -1):
            w = {k: v.astype(np.float64) for k, v in full.items()}
            w[name][index] += sign * eps
            bumped.append(_reference(w, data))
        fd = (bumped[0] - bumped[1]) / (2 * eps)
        assert grads[name][index] == pytest.approx(fd, rel=2e-3, abs=1e-4), name
