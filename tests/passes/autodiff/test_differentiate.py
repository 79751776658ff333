"""The differentiate pass: what it appends, what it refuses, and that the result is ordinary
IR that the usual passes optimise."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.printer import print_module
from nxcc.passes.autodiff.differentiate import (
    Differentiate,
    GradientError,
    differentiable_params,
    differentiate,
)
from nxcc.passes.manager import PassManager
from nxcc.passes.registry import pipeline

MODEL = """
module @m {
  func @main(%x: f32[2,3], %w: f32[3,4], %mask: f32[2,4]) -> ("loss": f32[]) {
    %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} : f32[2,4]
    %1 = constant() {value = splat<f32[]: 0.0>} : f32[]
    %2 = broadcast_in_dim(%1) {shape = [2,4], broadcast_dimensions = []} : f32[2,4]
    %3 = compare(%mask, %2) {direction = "GT"} : pred[2,4]
    %4 = tanh(%0) : f32[2,4]
    %5 = select(%3, %4, %2) : f32[2,4]
    %6 = reduce(%5, %1) {dimensions = [0,1], computation = @add} : f32[]
    return %6
  }
  func @add(%a: f32[], %b: f32[]) -> (f32[]) {
    %0 = add(%a, %b) : f32[]
    return %0
  }
}
"""


def test_gradients_are_appended_as_results_and_match_numpy() -> None:
    module = parse_module(MODEL)
    Differentiate(wrt=("w", "x"), loss=0).run(module)
    fn = module.entry_function
    assert fn.result_names == ["loss", "grad.w", "grad.x"]
    PassManager(pipeline(2)).run(module)  # verifies; fold/CSE/DCE apply
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(2, 3)).astype(np.float32), rng.normal(size=(3, 4)).astype(np.float32)
    mask = rng.choice([-1.0, 1.0], (2, 4)).astype(np.float32)
    loss, gw, gx = IRContext(module).call("main", [x, w, mask])
    dy = (1 - np.tanh(x @ w) ** 2) * (mask > 0)
    np.testing.assert_allclose(gw, x.T @ dy, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gx, dy @ w.T, rtol=1e-5, atol=1e-6)
    assert "dot_general" in print_module(module)


def test_a_mask_used_only_as_a_select_condition_is_not_trainable() -> None:
    module = parse_module(MODEL)
    fn = module.entry_function
    names = [p.name for p in differentiable_params(fn, fn.results[0], fn.params)]
    assert names == ["x", "w"]


def test_an_op_without_a_rule_is_an_error_naming_it() -> None:
    module = parse_module("""
module @m {
  func @main(%x: f32[3], %y: f32[3]) -> ("loss": f32[]) {
    %0 = atan2(%x, %y) : f32[3]
    %1 = constant() {value = splat<f32[]: 0.0>} : f32[]
    %2 = reduce(%0, %1) {dimensions = [0], computation = @add} : f32[]
    return %2
  }
  func @add(%a: f32[], %b: f32[]) -> (f32[]) {
    %0 = add(%a, %b) : f32[]
    return %0
  }
}
""")
    fn = module.entry_function
    with pytest.raises(GradientError, match="'atan2' has no gradient rule"):
        differentiate(module, fn, fn.params, fn.results[0])


def test_the_loss_must_be_a_float_scalar() -> None:
    module = parse_module(MODEL)
    fn = module.entry_function
    with pytest.raises(GradientError, match="floating-point scalar"):
        differentiate(module, fn, fn.params[:1], fn.body[0].result)


def test_a_value_the_loss_does_not_depend_on_gets_zeros() -> None:
    module = parse_module(MODEL)
    fn = module.entry_function
    (g,) = differentiate(module, fn, [fn.params[2]], fn.results[0])
    fn.results.append(g)
    fn.result_names.append("grad.mask")
    out = IRContext(module).call("main", [np.ones((2, 3), np.float32),
                                          np.ones((3, 4), np.float32),
                                          np.ones((2, 4), np.float32)])
    np.testing.assert_array_equal(out[1], np.zeros((2, 4), np.float32))
