"""Fused ops and reshape views in the executor: the planned program runs them bound to
their arrays and gives the unfused results."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import ProgramExecutor
from nxcc.passes.fusion.elementwise import FuseElementwise
from tests.backend.runtime.test_executor import mixed_module, reference

RNG = np.random.default_rng(5)


def test_reshapes_of_planned_values_are_views_without_instructions() -> None:
    program = lower_module(mixed_module(), WeightTable())
    fn = program["functions"]["main"]
    assert "reshape" not in [ins["op"] for ins in fn["instructions"]]
    views = [s for s in fn["slots"] if "view_of" in s]
    assert [v["shape"] for v in views] == [[2, 6], [4, 3]]
    # each view sits where its source does
    for v in views:
        assert v["offset"] == fn["slots"][v["view_of"]]["offset"]


def test_fused_programs_run_bound_and_match_numpy() -> None:
    module = mixed_module()
    assert FuseElementwise().run(module)
    table = WeightTable()
    program = lower_module(module, table)
    ops = [ins["op"] for ins in program["functions"]["main"]["instructions"]]
    assert ops.count("fused_elementwise") == 2, ops
    ex = ProgramExecutor(program, table.arrays)
    for _ in range(3):  # the bound plan follows new inputs
        x = RNG.standard_normal((3, 4)).astype(np.float32)
        for got, want in zip(ex.run([x]), reference(x), strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


SPLAT_PRODUCTS = """\
module @m {
  func @main(%x: f32[2,64], %img: f32[1,3,8,8]) -> (f32[2,32], f32[1,4,6,6]) {
    %w = constant() {value = splat<f32[32,64]: 0.5>} : f32[32,64]
    %y = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [1]} : f32[2,32]
    %k = constant() {value = splat<f32[4,3,3,3]: 0.25>} : f32[4,3,3,3]
    %c = convolution(%img, %k) {window_strides = [1, 1], padding = [[0, 0], [0, 0]], lhs_dilation = [1, 1], rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, output_feature_dim = 1, output_spatial_dims = [2, 3]} : f32[1,4,6,6]
    return %y, %c
  }
}
"""


def test_splat_weights_of_products_and_convolutions_are_made_dense_once() -> None:
    """A splat constant is a zero-stride view, which BLAS cannot read: the bound steps
    read an ordinary array made from it at load, and give the same numbers."""

    from nxcc.ir.parser import parse_module

    table = WeightTable()
    program = lower_module(parse_module(SPLAT_PRODUCTS), table)
    assert [s["kind"] for s in program["functions"]["main"]["slots"]].count("splat") == 2
    ex = ProgramExecutor(program, table.arrays)
    for _ in range(2):
        x = RNG.standard_normal((2, 64)).astype(np.float32)
        img = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
        y, c = ex.run([x, img])
        np.testing.assert_allclose(y, np.repeat(x.sum(1, keepdims=True) * 0.5, 32, 1),
                                   rtol=1e-5, atol=1e-5)
        windows = sliding_window_view(img[0], (3, 3), axis=(1, 2)).sum(axis=(0, 3, 4))
        np.testing.assert_allclose(c[0], np.broadcast_to(windows * 0.25, (4, 6, 6)),
                                   rtol=1e-5, atol=1e-5)
    steps = ex.functions["main"].bound(ex).steps
    matmul = next(s for s in steps if getattr(s, "func", None) in (np.matmul, np.dot))
    assert 0 not in matmul.args[1].strides  # the dense copy, not the splat view


SPLAT_CONV_RELU = """\
module @m {
  func @main(%img: f32[2,3,8,8], %b: f32[4]) -> (f32[2,4,6,6]) {
    %k = constant() {value = splat<f32[4,3,3,3]: 0.25>} : f32[4,3,3,3]
    %c = convolution(%img, %k) {window_strides = [1, 1], padding = [[0, 0], [0, 0]], lhs_dilation = [1, 1], rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, output_feature_dim = 1, output_spatial_dims = [2, 3]} : f32[2,4,6,6]
    %bb = broadcast_in_dim(%b) {shape = [2, 4, 6, 6], broadcast_dimensions = [1]} : f32[2,4,6,6]
    %a = add(%c, %bb) : f32[2,4,6,6]
    %z = constant() {value = splat<f32[2,4,6,6]: 0.0>} : f32[2,4,6,6]
    %r = maximum(%a, %z) : f32[2,4,6,6]
    return %r
  }
}
"""


def test_a_fused_convolution_runs_bound_and_gives_the_unfused_values() -> None:
    """Its splat weight is made dense at load, its epilogue's operands are not (ReLU's
    splat zero would become a full-size array); the results are the unfused program's (up
    to the rounding of the bias, which the bound step adds inside the product)."""
    from nxcc.ir import ops
    from nxcc.ir.kernels.plan import PLANS
    from nxcc.ir.parser import parse_module
    from nxcc.passes.fusion.epilogue import FuseEpilogues

    assert list(PLANS[ops.fused_convolution].dense(4)) == [0, 1]
    plain_table, fused_table = WeightTable(), WeightTable()
    plain = lower_module(parse_module(SPLAT_CONV_RELU), plain_table)
    module = parse_module(SPLAT_CONV_RELU)
    assert FuseElementwise().run(module) and FuseEpilogues().run(module)
    fused = lower_module(module, fused_table)
    assert [i["op"] for i in fused["functions"]["main"]["instructions"]] == [
        "fused_convolution"]
    ex_plain = ProgramExecutor(plain, plain_table.arrays)
    ex_fused = ProgramExecutor(fused, fused_table.arrays)
    for _ in range(2):
        img = RNG.standard_normal((2, 3, 8, 8)).astype(np.float32)
        b = RNG.standard_normal(4).astype(np.float32)
        (want,) = ex_plain.run([img, b])
        (got,) = ex_fused.run([img, b])
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(got, _conv_bias_relu_in_one_product(img, b))
        assert (got >= 0).all() and (got > 0).any()


def _conv_bias_relu_in_one_product(img: np.ndarray, b: np.ndarray) -> np.ndarray:
    """SPLAT_CONV_RELU with its bias as one more term of the product, as the bound step
    computes it: max([W | b] @ [im2col(img); 1], 0), one BLAS product per image."""
    weights = np.concatenate([np.full((4, 27), 0.25, np.float32), b[:, None]], axis=1)
    out = np.empty((2, 4, 6, 6), np.float32)
    for n in range(2):
        cols = sliding_window_view(img[n], (3, 3), axis=(1, 2))  # (3, 6, 6, 3, 3)
        matrix = np.ones((28, 36), np.float32)
        matrix[:27] = cols.transpose(0, 3, 4, 1, 2).reshape(27, 36)
        out[n] = np.maximum(weights @ matrix, 0).reshape(4, 6, 6)
    return out
