"""Random operators on the counter-based generator (random_bits, Philox4x32-10): known
answers, reproducibility, statistics (mean and variance within 5 standard errors), the
onnx node cases that can only be judged by their statistics, and dropout in a training step
drawing a new mask every step."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import nxcc.driver.onnx_backend as backend
from nxcc.ir.kernels.random import philox4x32, random_words

N = 20000
#: operators whose outputs only statistics can check (tests/compiler/onnx/
#: test_converter_coverage.py counts them as exercised by this file)
STATISTICALLY_TESTED = ("RandomNormal", "RandomNormalLike", "RandomUniform",
                        "RandomUniformLike")


def test_philox_known_answers() -> None:
    """Random123's known-answer vectors for philox4x32_10."""
    zero = philox4x32(np.zeros((1, 4), np.uint32), 0)[0]
    assert [hex(x) for x in zero] == ["0x6627e8d5", "0xe169c58d", "0xbc57ac4c", "0x9b00dbd8"]
    ones = philox4x32(np.full((1, 4), 0xFFFFFFFF, np.uint32), (1 << 64) - 1)[0]
    assert [hex(x) for x in ones] == ["0x408f276d", "0x41c83b0e", "0xa20bc7c6", "0x6d5451fd"]
    assert not np.array_equal(random_words(1, 0, 8), random_words(1, 1, 8))
    np.testing.assert_array_equal(random_words(7, 3, 9), random_words(7, 3, 9))


def _run(node: onnx.NodeProto, inputs: dict[str, np.ndarray], out_type: int,
         out_shape: list[int], n_out: int = 1) -> list[np.ndarray]:
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype),
                                       list(v.shape)) for k, v in inputs.items()],
        [helper.make_tensor_value_info(o, out_type if i == 0 else TensorProto.BOOL, out_shape)
         for i, o in enumerate(node.output[:n_out])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return backend.prepare(model).run(inputs)


def _within(value: float, expected: float, stderr: float) -> None:
    assert abs(value - expected) < 5 * stderr, (value, expected, stderr)


def test_random_normal_and_uniform_statistics() -> None:
    (z,) = _run(helper.make_node("RandomNormal", [], ["y"], shape=[N], mean=1.5, scale=2.0,
                                 seed=3.0), {}, TensorProto.FLOAT, [N])
    _within(z.mean(), 1.5, 2.0 / np.sqrt(N))
    _within(z.var(), 4.0, 4.0 * np.sqrt(2 / N))
    (u,) = _run(helper.make_node("RandomUniform", [], ["y"], shape=[N], low=-1.0, high=3.0),
                {}, TensorProto.FLOAT, [N])
    assert u.min() >= -1.0 and u.max() < 3.0
    _within(u.mean(), 1.0, 4.0 / np.sqrt(12 * N))
    _within(u.var(), 16 / 12, 16 * np.sqrt((1 / 80 - 1 / 144) / N))


def test_like_variants_take_the_input_shape_and_type() -> None:
    x = np.zeros((100, 200), np.float64)
    (z,) = _run(helper.make_node("RandomNormalLike", ["x"], ["y"]), {"x": x},
                TensorProto.DOUBLE, [100, 200])
    assert z.dtype == np.float64 and z.shape == x.shape
    _within(z.mean(), 0.0, 1 / np.sqrt(z.size))
    _within(z.var(), 1.0, np.sqrt(2 / z.size))
    (u,) = _run(helper.make_node("RandomUniformLike", ["x"], ["y"], dtype=TensorProto.FLOAT),
                {"x": x}, TensorProto.FLOAT, [100, 200])
    assert u.dtype == np.float32 and 0 <= u.min() and u.max() < 1
    _within(u.mean(), 0.5, 1 / np.sqrt(12 * u.size))


def test_bernoulli_statistics_and_seed_reproducibility() -> None:
    p = np.random.default_rng(0).uniform(size=N)
    node = helper.make_node("Bernoulli", ["p"], ["y"], seed=5.0)
    (y,) = _run(node, {"p": p}, TensorProto.DOUBLE, [N])
    assert set(np.unique(y)) <= {0.0, 1.0}
    _within(y.sum(), p.sum(), np.sqrt((p * (1 - p)).sum()))
    (again,) = _run(node, {"p": p}, TensorProto.DOUBLE, [N])
    np.testing.assert_array_equal(y, again)


def test_training_dropout_statistics() -> None:
    x = np.random.default_rng(1).normal(size=(N,)).astype(np.float32) + 3
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y", "mask"], seed=1)
    y, mask = _run(node, {"x": x, "r": np.array(0.3, np.float32), "t": np.array(True)},
                   TensorProto.FLOAT, [N], n_out=2)
    _within(mask.sum(), 0.7 * N, np.sqrt(N * 0.3 * 0.7))
    np.testing.assert_allclose(y[mask], x[mask] / 0.7, rtol=1e-6)
    assert np.all(y[~mask] == 0)


@functools.cache
def _node_cases() -> dict:
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {t.name: t for t in load_model_tests(kind="node")}


RANDOM_CASES = ["test_bernoulli", "test_bernoulli_double", "test_bernoulli_seed",
                "test_bernoulli_expanded", "test_bernoulli_double_expanded",
                "test_bernoulli_seed_expanded",
                "test_training_dropout_default", "test_training_dropout_default_mask",
                "test_training_dropout", "test_training_dropout_mask"]


@pytest.mark.parametrize("name", RANDOM_CASES)
def test_random_node_cases_are_right_but_for_the_draw(name: str) -> None:
    """onnx's own cases of random operators: the outputs have the right types and shapes
    and are what the operator can produce (0/1 draws; dropped or scaled elements with a
    consistent mask); the exact values only a specific generator could match."""
    case = _node_cases()[name]
    inputs, expected = case.data_sets[0]
    outs = backend.prepare(case.model).run(inputs)
    for got, want in zip(outs, expected, strict=True):
        assert got.shape == want.shape and got.dtype == want.dtype
    if name.startswith("test_bernoulli"):
        assert set(np.unique(outs[0])) <= {0, 1}
        return
    x = inputs[0]
    ratio = float(inputs[1]) if len(inputs) > 1 else 0.5
    kept = outs[0] != 0
    np.testing.assert_allclose(outs[0][kept], x[kept] / (1 - ratio), rtol=1e-6)
    if len(outs) > 1:
        np.testing.assert_array_equal(outs[1], kept)


def test_dropout_in_a_training_step_draws_a_new_mask_each_step(tmp_path) -> None:
    from tests.cli_helpers import neuronx_cc

    rng = np.random.default_rng(2)
    w = helper.make_tensor("w", TensorProto.FLOAT, [8, 4], rng.normal(size=32).tolist())
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("Dropout", ["h", "ratio", "training"], ["y"], seed=7)],
        "drop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [16, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [16, 4])],
        [w, helper.make_tensor("ratio", TensorProto.FLOAT, [], [0.5]),
         helper.make_tensor("training", TensorProto.BOOL, [], [True])])
    model = tmp_path / "drop.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), model)
    batch = tmp_path / "b.npz"
    np.savez(batch, x=rng.normal(size=(16, 8)).astype(np.float32),
             t=np.zeros((16, 4), np.float32))
    neff = tmp_path / "s.neff"
    result = neuronx_cc("compile", str(model), "--target", "trn1", "--training", "--loss",
                        "mse", "--loss-input", "y", "--label-input", "t", "--optimizer", "sgd",
                        "--lr", "1e-30", "--output", str(neff))
    assert result.returncode == 0, result.stderr
    losses = []
    for _ in range(2):
        out = tmp_path / "o.npz"
        assert neuronx_cc("run", str(neff), "--inputs", str(batch), "--steps", "3", "--output",
                          str(out), "-q").returncode == 0
        losses.append(np.load(out)["loss"])
    assert len(set(losses[0].tolist())) == 3  # the weights barely move: the masks differ
    np.testing.assert_array_equal(losses[0], losses[1])  # and are the same for the seed
