"""fused_convolution's kernel and plan: the convolution's bits, then the epilogue's, on
every route (rows, shifted products, im2col tiles, 1x1, groups), in one tile or several,
with strides, padding and more than one image; against the convolution kernel followed by
numpy's ufuncs (exactly, but for the plan's bias inside the product, `conv_bias`, which
changes rounding only) and a float64 reference."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import ops
from nxcc.ir.kernels import conv_rows as rows
from nxcc.ir.kernels import conv_tiles as tiles
from nxcc.ir.kernels.base import NO_CALLS
from nxcc.ir.kernels.conv_bias import fold_bias
from nxcc.ir.kernels.convolution import convolution
from nxcc.ir.kernels.fused_convolution import fused_convolution, fused_convolution_plan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from tests.ir.kernels.fake_ctx import type_of
from tests.ir.kernels.test_convolution import _attrs, ref_conv

RNG = np.random.default_rng(17)

#: bias along the features, a residual of the result's shape, ReLU against a splat zero
PROGRAM = ("a0[0,1,2,3] a1[1] a2[0,1,2,3] a3[0,1,2,3]; t0 = add(a0, a1); "
           "t1 = add(t0, a2); t2 = maximum(t1, a3)")
#: the bias and ReLU alone: once the bias is in the product, nothing varies along the
#: rows but the product (the row route's epilogue runs on its wide product)
BIAS_RELU = ("a0[0,1,2,3] a1[1] a2[0,1,2,3] a3[0,1,2,3]; t0 = add(a0, a1); "
             "t1 = maximum(t0, a3)")

CASES = [
    # x shape, w shape, strides, padding, groups: the route taken, whether the bias goes
    # into the product
    ((2, 8, 9, 9), (16, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), 1, True),     # rows
    ((1, 16, 7, 6), (8, 16, 3, 3), (1, 1), ((1, 0), (2, 1)), 1, False),   # shifted products
    ((2, 3, 11, 11), (4, 3, 3, 3), (2, 2), ((0, 1), (1, 0)), 1, True),    # im2col, strided
    ((2, 8, 5, 5), (6, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), 1, False),     # 1x1: the input
    ((2, 4, 5, 5), (8, 4, 1, 1), (1, 1), ((0, 0), (0, 0)), 1, True),      # 1x1: a copy
    ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), 2, False),     # two groups
    ((1, 130, 5, 4), (140, 130, 3, 3), (1, 1), ((1, 1), (0, 0)), 1, True),  # im2col
]


def _arrays(x_shape, w_shape, strides, padding, groups, program=PROGRAM):
    attrs = {**_attrs(4, strides, padding, (1, 1), (1, 1), groups), "program": program}
    attrs = ops.fused_convolution.check_attrs(attrs)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    shape = ops.convolution.infer([type_of(x), type_of(w)], attrs, None)[0].shape
    bias = RNG.standard_normal(w_shape[0]).astype(np.float32)
    residual = RNG.standard_normal(shape).astype(np.float32)
    zero = np.broadcast_to(np.float32(0), shape)  # a splat slot
    return attrs, [x, w, bias, residual, zero], shape


def _residual(args, attrs) -> np.ndarray | float:
    """What the program adds after the bias: the residual operand, or nothing."""
    return args[3] if "add(t0, a2)" in str(attrs["program"]) else 0.0


def _unfused(args, shape, attrs) -> np.ndarray:
    """The convolution kernel's result, then the epilogue by numpy's float32 ufuncs."""
    product = np.empty(shape, np.float32)
    convolution(args[:2], [product], attrs, NO_CALLS)
    return np.maximum(product + args[2].reshape(1, -1, 1, 1) + _residual(args, attrs),
                      args[4])


@pytest.mark.parametrize("program", [PROGRAM, BIAS_RELU])
@pytest.mark.parametrize("tile_bytes", [rows.TILE_BYTES, 700])  # one tile; a few
@pytest.mark.parametrize("case", CASES)
def test_plan_and_kernel_give_the_unfused_values(case, tile_bytes, program,
                                                 monkeypatch) -> None:
    """The kernel gives the unfused bits; so does the plan, but for the rounding of a bias
    added inside the product, on the routes with a column matrix to take it."""
    monkeypatch.setattr(rows, "TILE_BYTES", tile_bytes)
    monkeypatch.setattr(tiles, "TILE_BYTES", tile_bytes // 4)
    *shapes, folds = case
    attrs, args, shape = _arrays(*shapes, program=program)
    want = _unfused(args, shape, attrs)
    x, w, *_ = args
    strides, padding, groups = shapes[2], shapes[3], shapes[4]
    exact = ref_conv(x.astype(np.float64), w.astype(np.float64), strides, padding, (1, 1),
                     (1, 1), groups)
    exact = np.maximum(exact + args[2].reshape(1, -1, 1, 1) + _residual(args, attrs), 0)
    np.testing.assert_allclose(want, exact, rtol=1e-4, atol=1e-4)

    out = np.full(shape, np.nan, np.float32)
    fused_convolution(args, [out], attrs, NO_CALLS)
    np.testing.assert_array_equal(out, want)

    def check(got: np.ndarray, unfused: np.ndarray) -> None:
        if folds:  # one more term in each BLAS sum: a rounding of the sum's size apart
            np.testing.assert_allclose(got, unfused, rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_array_equal(got, unfused)

    out = np.full(shape, np.nan, np.float32)
    step = fused_convolution_plan(args, out, attrs, NO_CALLS,
                                  [False, True, True, False, True], ScratchPool())
    step()
    check(out, want)
    args[0][...] = RNG.standard_normal(args[0].shape)  # the bound step follows its inputs
    args[3][...] = RNG.standard_normal(shape)
    step()
    check(out, _unfused(args, shape, attrs))
    if folds and program == PROGRAM:  # and its bias, when that is not fixed
        args[2][...] = RNG.standard_normal(args[2].shape)
        step = fused_convolution_plan(args, out, attrs, NO_CALLS,
                                      [False, True, False, False, True], ScratchPool())
        step()
        args[2][...] = RNG.standard_normal(args[2].shape)
        step()
        check(out, _unfused(args, shape, attrs))


def test_a_bias_alone_leaves_no_epilogue() -> None:
    """The product is the whole result: on the im2col route, written straight into the
    out; the same values as the convolution followed by the add."""
    attrs, args, shape = _arrays((1, 3, 9, 9), (5, 3, 3, 3), (2, 2), ((1, 1), (1, 1)), 1,
                                 program="a0[0,1,2,3] a1[1]; t0 = add(a1, a0)")
    product = np.empty(shape, np.float32)
    convolution(args[:2], [product], attrs, NO_CALLS)
    out = np.full(shape, np.nan, np.float32)
    fused_convolution_plan(args[:3], out, attrs, NO_CALLS, [False, True, True],
                           ScratchPool())()
    np.testing.assert_allclose(out, product + args[2].reshape(1, -1, 1, 1), rtol=1e-5,
                               atol=1e-5)


@pytest.mark.parametrize(("program", "bias", "rest"), [
    # a bias along the features: the rest reads the biased product as a0
    (BIAS_RELU, (4,), "a0[0,1,2,3] a1[1] a2[0,1,2,3] a3[0,1,2,3]; t0 = maximum(a0, a3)"),
    # a splat of the result's shape, and a scalar, are constant along the features too
    ("a0[0,1,2,3] a1[0,1,2,3]; t0 = add(a0, a1); t1 = exp(t0)", (2, 4, 3, 3),
     "a0[0,1,2,3] a1[0,1,2,3]; t0 = exp(a0)"),
    ("a0[0,1,2,3] a1[]; t0 = add(a1, a0)", (), None),
    # not a bias: a0 read again, an add of a value varying along the rows, a multiply
    ("a0[0,1,2,3] a1[1]; t0 = add(a0, a1); t1 = multiply(t0, a0)", (4,), "no"),
    ("a0[0,1,2,3] a1[2]; t0 = add(a0, a1)", (3,), "no"),
    ("a0[0,1,2,3] a1[1]; t0 = multiply(a0, a1)", (4,), "no"),
])
def test_which_epilogues_start_with_a_bias(program: str, bias: tuple, rest) -> None:
    out = np.empty((2, 4, 3, 3), np.float32)
    value = (np.broadcast_to(np.float32(0.5), bias) if bias == out.shape
             else np.arange(int(np.prod(bias)), dtype=np.float32).reshape(bias))
    found = fold_bias([value], [True], out, {"program": program, "output_feature_dim": 1})
    if rest == "no":
        assert found is None
        return
    assert found is not None
    got, left = found
    assert left == rest and got.fixed
    want = np.broadcast_to(value.reshape(-1)[:4] if value.ndim == 1 else value.reshape(-1)[0],
                           (4,))
    np.testing.assert_array_equal(got.values, want)


def test_a_1x1_convolution_multiplies_a_slab_of_rows_itself() -> None:
    """The rows of a slab of an image lie one after another (channels further apart):
    BLAS reads them as they are; columns do not."""
    x = np.zeros((1, 4, 6, 5), np.float32)
    w = np.zeros((8, 4, 1, 1), np.float32)
    assert tiles.multiplies_the_input(x[:, :, 2:5], w, (1, 1), (0, 0), (0, 0))
    assert not tiles.multiplies_the_input(x[..., 1:4], w, (1, 1), (0, 0), (0, 0))
    assert not tiles.multiplies_the_input(x, w, (2, 2), (0, 0), (0, 0))
    assert tiles.folds_by_copy(x, w) and not tiles.folds_by_copy(x, w[:7])


def test_a_bias_goes_into_short_sums_only(monkeypatch) -> None:
    """A bias makes each sum one term longer; a sum the BLAS would cut into blocks (over
    `MAX_TERMS` terms) keeps its add in the epilogue: a split product then rounds as the
    whole (`conv_bias`)."""
    from nxcc.ir.kernels import conv_bias
    from nxcc.ir.kernels.convolution import prepare_convolution

    monkeypatch.setattr(conv_bias, "MAX_TERMS", 3 * 3 * 3 + 1)
    attrs, args, shape = _arrays((1, 3, 9, 9), (5, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), 1)
    bias = conv_bias.Bias(args[2], True)
    out = np.empty(shape, np.float32)
    assert prepare_convolution(args[:2], out, attrs, [False, True], bias=bias) is not None
    monkeypatch.setattr(conv_bias, "MAX_TERMS", 3 * 3 * 3)
    assert prepare_convolution(args[:2], out, attrs, [False, True], bias=bias) is None


def test_a_bias_runs_along_the_output_feature_dimension() -> None:
    """Features last (N, H, W, O): a bias along dimension 3, not one along dimension 1."""
    out = np.empty((2, 3, 3, 4), np.float32)
    bias = np.arange(4, dtype=np.float32)
    found = fold_bias([bias], [False], out, {"program": "a0[0,1,2,3] a1[3]; t0 = add(a0, a1)",
                                             "output_feature_dim": 3})
    assert found is not None and not found[0].fixed
    np.testing.assert_array_equal(found[0].values, bias)
    assert fold_bias([bias[:3]], [True], out, {"program": "a0[0,1,2,3] a1[1]; t0 = add(a0, a1)",
                                               "output_feature_dim": 3}) is None
