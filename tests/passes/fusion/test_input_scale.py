"""A positive scaling of a convolution's input folded into its weights by fuse-epilogue
(`fusion/input_scale.py`): what folds, what the program and weights become, and the values
against the unfolded ops' (within the reassociation's rounding)."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from nxcc.ir import ops
from nxcc.ir.interpreter import IRContext
from nxcc.ir.parser import parse_module
from nxcc.ir.rewrite import constant_value
from nxcc.ir.verifier import verify_module
from nxcc.passes.registry import PASSES
from tests.passes.fusion.test_epilogue import CONV

# batch norm (per channel scale and shift), ReLU, then a 3x3 convolution padded by one
PRE_ACTIVATION = f"""\
module @m {{
  func @main(%x: f32[1,3,6,6], %w: f32[4,3,3,3]) -> (f32[1,4,6,6]) {{
    %s = constant() {{value = dense<f32[3]: [0.5, 2.0, 1.25]>}} : f32[3]
    %t = constant() {{value = dense<f32[3]: [0.1, -0.7, 0.3]>}} : f32[3]
    %sb = broadcast_in_dim(%s) {{shape = [1, 3, 6, 6], broadcast_dimensions = [1]}} : f32[1,3,6,6]
    %tb = broadcast_in_dim(%t) {{shape = [1, 3, 6, 6], broadcast_dimensions = [1]}} : f32[1,3,6,6]
    %m = multiply(%x, %sb) : f32[1,3,6,6]
    %a = add(%m, %tb) : f32[1,3,6,6]
    %z = constant() {{value = splat<f32[1,3,6,6]: 0.0>}} : f32[1,3,6,6]
    %r = maximum(%a, %z) : f32[1,3,6,6]
    %c = convolution(%r, %w) {{{CONV}}} : f32[1,4,6,6]
    return %c
  }}
}}
"""

WEIGHTS = np.random.default_rng(3).standard_normal((4, 3, 3, 3)).astype(np.float32)


def _with_weights(text: str) -> str:
    """`text` with %w a constant of WEIGHTS (the fold needs constant weights)."""
    values = ", ".join(repr(float(v)) for v in WEIGHTS.reshape(-1))
    return text.replace("(%x: f32[1,3,6,6], %w: f32[4,3,3,3])", "(%x: f32[1,3,6,6])").replace(
        "    %s = constant()",
        f"    %w = constant() {{value = dense<f32[4,3,3,3]: [{values}]>}} : f32[4,3,3,3]\n"
        "    %s = constant()", 1)


def _fold(text: str):  # type: ignore[no-untyped-def]
    """The module of `text`, its result on a random input before and after fuse and
    fuse-epilogue."""
    module = parse_module(textwrap.dedent(text))
    x = np.random.default_rng(5).standard_normal((1, 3, 6, 6)).astype(np.float32)
    want = IRContext(module).call("main", [x])[0]
    for name in ("fuse", "fuse-epilogue"):
        PASSES[name]().run(module)
    verify_module(module)
    return module, IRContext(module).call("main", [x])[0], want


def _body(module) -> list:  # type: ignore[no-untyped-def]
    return [op for op in module.functions["main"].body
            if op.opdef not in (ops.constant, ops.broadcast_in_dim)]


def test_a_positive_batch_norm_scale_moves_into_the_weights() -> None:
    module, got, want = _fold(_with_weights(PRE_ACTIVATION))
    pre, conv = _body(module)
    assert pre.opdef is ops.fused_elementwise and conv.opdef is ops.convolution
    assert str(pre.attrs["program"]).endswith("t0 = add(a0, a2); t1 = maximum(t0, a1)")
    scale = np.array([0.5, 2.0, 1.25], np.float32)
    folded = constant_value(conv.operands[1])
    assert folded is not None
    np.testing.assert_allclose(folded.array, WEIGHTS * scale[None, :, None, None], rtol=1e-7)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_a_scaling_alone_leaves_the_convolution_reading_its_input() -> None:
    text = _with_weights(PRE_ACTIVATION).replace(
        "    %a = add(%m, %tb) : f32[1,3,6,6]\n", "").replace(
        "    %r = maximum(%a, %z) : f32[1,3,6,6]\n", "").replace(
        "convolution(%r, %w)", "convolution(%m, %w)")
    module, got, want = _fold(text)
    (conv,) = _body(module)
    assert conv.opdef is ops.convolution
    assert conv.operands[0] is module.functions["main"].params[0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("change", [
    ("[0.5, 2.0, 1.25]", "[0.5, -2.0, 1.25]"),  # a negative scale: ReLU does not commute
    ("[0.5, 2.0, 1.25]", "[0.5, 0.0, 1.25]"),  # a zero scale: t / s undefined
    ("splat<f32[1,3,6,6]: 0.0>", "splat<f32[1,3,6,6]: 0.5>"),  # not a ReLU
])
def test_scales_that_do_not_commute_are_left(change: tuple[str, str]) -> None:
    module, got, want = _fold(_with_weights(PRE_ACTIVATION).replace(*change))
    pre, _ = _body(module)
    assert "multiply" in str(pre.attrs["program"])
    np.testing.assert_array_equal(got, want)


def test_weights_that_are_not_constant_are_left() -> None:
    module = parse_module(textwrap.dedent(PRE_ACTIVATION))
    for name in ("fuse", "fuse-epilogue"):
        PASSES[name]().run(module)
    pre, _ = _body(module)
    assert "multiply" in str(pre.attrs["program"])
