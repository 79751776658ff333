"""Losses, schedules, optimizers and clipping built as IR, against numpy written from
PyTorch's documented algorithms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import IRContext
from nxcc.ir.types import TensorType
from nxcc.ir.verifier import verify_module
from nxcc.passes.autodiff.losses import LossError, cross_entropy, mse
from nxcc.passes.autodiff.optimizers import (
    OptimizerConfig,
    apply_optimizer,
    clip_by_global_norm,
)
from nxcc.passes.autodiff.schedules import Schedule, learning_rate
from tests.passes.autodiff.gradcheck import check_gradients


def run(build, *arrays: np.ndarray) -> list[np.ndarray]:
    """Evaluate `build(b, params)` (a value or a list of values) on `arrays`."""
    module = Module("t")
    params = [Value(TensorType(DType.from_numpy(a.dtype), a.shape), f"p{i}")
              for i, a in enumerate(arrays)]
    fn = module.add_function(Function("main", params))
    out = build(Builder(module, fn), params)
    fn.results = list(out) if isinstance(out, list | tuple) else [out]
    fn.result_names = [f"r{i}" for i in range(len(fn.results))]
    verify_module(module)
    return IRContext(module).call("main", list(arrays))


def numpy_cross_entropy(logits: np.ndarray, labels: np.ndarray) -> float:
    flat, ids = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)
    keep = ids != -100
    shifted = flat - flat.max(-1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return float(-logp[keep, ids[keep]].mean())


def test_cross_entropy_ignores_minus_100_and_averages_the_rest() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 7)).astype(np.float32) * 3
    labels = rng.integers(0, 7, (2, 5))
    labels[0, 1] = labels[1, 4] = -100
    (loss,) = run(lambda b, p: cross_entropy(b, *p), logits, labels)
    assert loss.shape == () and loss.dtype == np.float32
    np.testing.assert_allclose(loss, numpy_cross_entropy(logits, labels), rtol=1e-6)


def test_cross_entropy_gradient_against_finite_differences() -> None:
    rng = np.random.default_rng(1)
    labels = np.array([[2, -100, 0], [1, 1, 3]])
    check_gradients(lambda b, p: cross_entropy(b, p[0], b.constant(labels)),
                    {"logits": rng.normal(size=(2, 3, 4))})


def test_mse_and_its_gradient() -> None:
    rng = np.random.default_rng(2)
    x, y = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    (loss,) = run(lambda b, p: mse(b, *p), x, y)
    np.testing.assert_allclose(loss, ((x - y) ** 2).mean())
    check_gradients(lambda b, p: mse(b, p[0], b.constant(y)), {"x": x})


def test_losses_refuse_mismatched_labels() -> None:
    with pytest.raises(LossError, match="integer labels of shape \\[2\\]"):
        run(lambda b, p: cross_entropy(b, *p), np.zeros((2, 3), np.float32),
            np.zeros((3,), np.int64))
    with pytest.raises(LossError, match="mse needs labels"):
        run(lambda b, p: mse(b, *p), np.zeros((2, 3), np.float32), np.zeros((2,), np.float32))


@pytest.mark.parametrize("schedule", [
    Schedule(1e-3), Schedule(1e-3, warmup_steps=3),
    Schedule(2e-3, warmup_steps=2, decay="linear", max_steps=7),
    Schedule(2e-3, warmup_steps=2, decay="cosine", max_steps=7),
    Schedule(1e-2, decay="cosine", max_steps=4)])
def test_schedules_follow_the_step_counter(schedule: Schedule) -> None:
    for k in range(10):
        (lr,) = run(lambda b, p: learning_rate(b, schedule, p[0]), np.array(k, np.int32))
        np.testing.assert_allclose(lr, np.float32(schedule.lr * schedule.factor(k)), rtol=1e-6)


def test_schedule_reference_values() -> None:
    cosine = Schedule(1.0, warmup_steps=2, decay="cosine", max_steps=6)
    assert [cosine.factor(k) for k in (0, 1, 2, 4, 6, 8)] == pytest.approx(
        [0.0, 0.5, 1.0, 0.5, 0.0, 0.0])
    linear = Schedule(1.0, warmup_steps=0, decay="linear", max_steps=4)
    assert [linear.factor(k) for k in (0, 1, 3, 5)] == pytest.approx([1.0, 0.75, 0.25, 0.0])


def numpy_adamw(p, g, m, v, t, lr, wd, b1, b2, eps):
    p = p * (1 - lr * wd)
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    step_size = lr / (1 - b1 ** t)
    denom = np.sqrt(v) / math.sqrt(1 - b2 ** t) + eps
    return p - step_size * m / denom, m, v


def numpy_sgd(p, g, buf, lr, momentum, wd, nesterov):
    d = g + wd * p
    buf = momentum * buf + d
    d = d + momentum * buf if nesterov else buf
    return p - lr * d, buf


def _optimizer_steps(cfg: OptimizerConfig, p, grads, lr):
    """Run the IR optimizer step by step, its state fed back."""
    slots = [np.zeros_like(p) for _ in cfg.slots]
    for t, g in enumerate(grads, start=1):
        def build(b, params, t=t):
            param, grad, *state = params
            lr_v = b.splat(lr, TensorType(DType.F32, ()))
            t_v = b.splat(float(t), TensorType(DType.F64, ()))
            new_p, new_slots = apply_optimizer(b, cfg, lr_v, t_v, param, grad, state)
            return [new_p, *new_slots]
        p, *slots = run(build, p, g, *slots)
    return p, slots


def test_adamw_matches_torch_algorithm() -> None:
    rng = np.random.default_rng(3)
    p0 = rng.normal(size=(4, 3)).astype(np.float32)
    grads = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(4)]
    cfg = OptimizerConfig("adamw", weight_decay=0.01, betas=(0.9, 0.95), eps=1e-8)
    got, (m_got, v_got) = _optimizer_steps(cfg, p0, grads, 1e-2)
    p, m, v = p0.astype(np.float64), 0.0, 0.0
    for t, g in enumerate(grads, start=1):
        p, m, v = numpy_adamw(p, g.astype(np.float64), m, v, t, 1e-2, 0.01, 0.9, 0.95, 1e-8)
    np.testing.assert_allclose(got, p, rtol=1e-5)
    np.testing.assert_allclose(m_got, m, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(v_got, v, rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("nesterov", [False, True])
def test_sgd_momentum_matches_torch_algorithm(nesterov: bool) -> None:
    rng = np.random.default_rng(4)
    p0 = rng.normal(size=(5,)).astype(np.float32)
    grads = [rng.normal(size=(5,)).astype(np.float32) for _ in range(3)]
    cfg = OptimizerConfig("sgd", momentum=0.9, weight_decay=1e-3, nesterov=nesterov)
    got, _ = _optimizer_steps(cfg, p0, grads, 0.1)
    p, buf = p0.astype(np.float64), 0.0
    for g in grads:
        p, buf = numpy_sgd(p, g.astype(np.float64), buf, 0.1, 0.9, 1e-3, nesterov)
    np.testing.assert_allclose(got, p, rtol=1e-5)


def test_clip_by_global_norm() -> None:
    a, c = np.array([3.0, 0.0], np.float32), np.array([[4.0]], np.float32)
    out = run(lambda b, p: [*clip_by_global_norm(b, p, 1.0)[0], clip_by_global_norm(b, p, 1.0)[1]],
              a, c)
    np.testing.assert_allclose(out[2], 5.0)
    coef = 1.0 / (5.0 + 1e-6)
    np.testing.assert_allclose(out[0], a * coef, rtol=1e-6)
    np.testing.assert_allclose(out[1], c * coef, rtol=1e-6)
    kept = run(lambda b, p: clip_by_global_norm(b, p, 10.0)[0], a, c)
    np.testing.assert_array_equal(kept[0], a)


def test_unknown_optimizer() -> None:
    with pytest.raises(ValueError, match="unknown optimizer 'lamb'"):
        OptimizerConfig("lamb")
