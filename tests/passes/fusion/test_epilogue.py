"""The fuse-epilogue pass (text tests): a convolution and the one elementwise op that reads
it become a `fused_convolution`, and nothing else does."""

from __future__ import annotations

import pytest

from tests.passes.pass_check import check, run_passes

CONV = ("window_strides = [1, 1], padding = [[1, 1], [1, 1]], lhs_dilation = [1, 1], "
        "rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, "
        "input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, "
        "kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, "
        "output_feature_dim = 1, output_spatial_dims = [2, 3]")
PRINTED = CONV  # the printer leaves the group counts' defaults out


def test_bias_and_relu_after_a_convolution_become_its_epilogue() -> None:
    check(
        f"""\
        module @m {{
          func @main(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %b: f32[4]) -> (f32[2,4,8,8]) {{
            %c = convolution(%x, %w) {{{CONV}}} : f32[2,4,8,8]
            %bb = broadcast_in_dim(%b) {{shape = [2, 4, 8, 8], broadcast_dimensions = [1]}} : f32[2,4,8,8]
            %a = add(%c, %bb) : f32[2,4,8,8]
            %z = constant() {{value = splat<f32[2,4,8,8]: 0.0>}} : f32[2,4,8,8]
            %r = maximum(%a, %z) : f32[2,4,8,8]
            return %r
          }}
        }}
        """,
        ("fuse", "fuse-epilogue"),
        f"""\
        module @m {{
          func @main(%x: f32[2,3,8,8], %w: f32[4,3,3,3], %b: f32[4]) -> (f32[2,4,8,8]) {{
            %z = constant() {{value = splat<f32[2,4,8,8]: 0.0>}} : f32[2,4,8,8]
            %r = fused_convolution(%x, %w, %b, %z) {{{PRINTED}, program = "a0[0,1,2,3] a1[1] a2[0,1,2,3]; t0 = add(a0, a1); t1 = maximum(t0, a2)"}} : f32[2,4,8,8]
            return %r
          }}
        }}
        """,
    )


def test_a_single_op_reading_the_convolution_second_is_renumbered() -> None:
    """A residual add whose second operand is the convolution: the program reads a1 as
    the convolution's result and a0 as the residual."""
    check(
        f"""\
        module @m {{
          func @main(%x: f32[1,3,8,8], %w: f32[3,3,3,3], %y: f32[1,3,8,8]) -> (f32[1,3,8,8]) {{
            %c = convolution(%x, %w) {{{CONV}}} : f32[1,3,8,8]
            %s = subtract(%y, %c) : f32[1,3,8,8]
            return %s
          }}
        }}
        """,
        ("fuse", "fuse-epilogue"),
        f"""\
        module @m {{
          func @main(%x: f32[1,3,8,8], %w: f32[3,3,3,3], %y: f32[1,3,8,8]) -> (f32[1,3,8,8]) {{
            %s = fused_convolution(%x, %w, %y) {{{PRINTED}, program = "a0[0,1,2,3] a1[0,1,2,3]; t0 = subtract(a1, a0)"}} : f32[1,3,8,8]
            return %s
          }}
        }}
        """,
    )


@pytest.mark.parametrize("after, results, types", [
    # read twice: by the epilogue and returned
    ("%r = negate(%c) : f32[1,4,8,8]", "%r, %c", "f32[1,4,8,8], f32[1,4,8,8]"),
    # read by two ops, one of them not elementwise
    ("%r = negate(%c) : f32[1,4,8,8]\n"
     "            %t = transpose(%c) {permutation = [0, 1, 3, 2]} : f32[1,4,8,8]",
     "%r, %t", "f32[1,4,8,8], f32[1,4,8,8]"),
    # an epilogue of another element type
    ("%r = convert(%c) {dtype = f64} : f64[1,4,8,8]", "%r", "f64[1,4,8,8]"),
    # read broadcast to a larger shape, not as the epilogue's whole result
    ("%b = broadcast_in_dim(%c) {shape = [2, 1, 4, 8, 8], broadcast_dimensions = [1, 2, 3, 4]}"
     " : f32[2,1,4,8,8]\n            %r = add(%b, %b) : f32[2,1,4,8,8]", "%r",
     "f32[2,1,4,8,8]"),
])
def test_a_convolution_read_otherwise_keeps_its_own_op(after: str, results: str,
                                                       types: str) -> None:
    text = f"""\
        module @m {{
          func @main(%x: f32[1,3,8,8], %w: f32[4,3,3,3]) -> ({types}) {{
            %c = convolution(%x, %w) {{{CONV}}} : f32[1,4,8,8]
            {after}
            return {results}
          }}
        }}
        """
    got = run_passes(text, "fuse", "fuse-epilogue")
    assert "fused_convolution" not in got and "= convolution(" in got, got


def test_a_constant_scale_of_constant_weights_is_folded_into_them() -> None:
    """A batch norm's scale (a splat here) multiplies the weights, once, at compile time;
    the epilogue keeps the shift and the ReLU."""
    check(
        f"""\
        module @m {{
          func @main(%x: f32[1,3,8,8]) -> (f32[1,4,8,8]) {{
            %w = constant() {{value = splat<f32[4,3,3,3]: 0.5>}} : f32[4,3,3,3]
            %c = convolution(%x, %w) {{{CONV}}} : f32[1,4,8,8]
            %s = constant() {{value = splat<f32[1,4,8,8]: 3.0>}} : f32[1,4,8,8]
            %m = multiply(%c, %s) : f32[1,4,8,8]
            %t = constant() {{value = splat<f32[1,4,8,8]: 0.25>}} : f32[1,4,8,8]
            %a = add(%m, %t) : f32[1,4,8,8]
            %z = constant() {{value = splat<f32[1,4,8,8]: 0.0>}} : f32[1,4,8,8]
            %r = maximum(%a, %z) : f32[1,4,8,8]
            return %r
          }}
        }}
        """,
        ("fuse", "fuse-epilogue"),
        f"""\
        module @m {{
          func @main(%x: f32[1,3,8,8]) -> (f32[1,4,8,8]) {{
            %t = constant() {{value = splat<f32[1,4,8,8]: 0.25>}} : f32[1,4,8,8]
            %z = constant() {{value = splat<f32[1,4,8,8]: 0.0>}} : f32[1,4,8,8]
            %w_scaled = constant() {{value = splat<f32[4,3,3,3]: 1.5>}} : f32[4,3,3,3]
            %r = fused_convolution(%x, %w_scaled, %t, %z) {{{PRINTED}, program = "a0[0,1,2,3] a1[0,1,2,3] a2[0,1,2,3]; t0 = add(a0, a1); t1 = maximum(t0, a2)"}} : f32[1,4,8,8]
            return %r
          }}
        }}
        """,
    )


PER_CHANNEL = f"""\
module @m {{
  func @main(%x: f32[2,3,8,8]) -> (f32[2,4,8,8]) {{
    %w = constant() {{value = dense<f32[4,3,1,1]: [0.5, -1.0, 0.25, 1.5, 2.0, -0.5, 0.75, 0.125, 1.0, -2.0, 0.5, 0.3]>}} : f32[4,3,1,1]
    %c = convolution(%x, %w) {{{CONV.replace("[[1, 1], [1, 1]]", "[[0, 0], [0, 0]]")}}} : f32[2,4,8,8]
    %s = constant() {{value = dense<f32[4]: [0.7, 1.3, -0.2, 2.5]>}} : f32[4]
    %sb = broadcast_in_dim(%s) {{shape = [2, 4, 8, 8], broadcast_dimensions = [1]}} : f32[2,4,8,8]
    %m = multiply(%sb, %c) : f32[2,4,8,8]
    return %m
  }}
}}
"""


def test_a_per_feature_scale_alone_leaves_a_convolution_of_scaled_weights() -> None:
    import numpy as np

    from nxcc.ir.interpreter import IRContext
    from nxcc.ir.parser import parse_module

    got = run_passes(PER_CHANNEL, "fuse", "fuse-epilogue")
    assert "multiply" not in got and "fused_convolution" not in got, got
    assert "%m = convolution(%x, %w_scaled)" in got, got
    x = np.random.default_rng(3).standard_normal((2, 3, 8, 8)).astype(np.float32)
    (want,) = IRContext(parse_module(PER_CHANNEL)).call("main", [x])
    (folded,) = IRContext(parse_module(got)).call("main", [x])
    np.testing.assert_allclose(folded, want, rtol=1e-6, atol=1e-6)
