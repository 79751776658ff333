"""fused_convolution's kernel and plan: the convolution's bits, then the epilogue's, on
every route (rows, shifted products, im2col tiles, 1x1, groups), in one tile or several,
with strides, padding and more than one image; against the convolution kernel followed by numpy's ufuncs, exactly, and a
float64 reference."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import ops
from nxcc.ir.kernels import conv_rows as rows
from nxcc.ir.kernels import conv_tiles as tiles
from nxcc.ir.kernels.base import NO_CALLS
from nxcc.ir.kernels.convolution import convolution
from nxcc.ir.kernels.fused_convolution import fused_convolution, fused_convolution_plan
from nxcc.ir.kernels.scratch_pool import ScratchPool
from tests.ir.kernels.fake_ctx import type_of
from tests.ir.kernels.test_convolution import _attrs, ref_conv

RNG = np.random.default_rng(17)

#: bias along the features, a residual of the result's shape, ReLU against a splat zero
PROGRAM = ("a0[0,1,2,3] a1[1] a2[0,1,2,3] a3[0,1,2,3]; t0 = add(a0, a1); "
           "t1 = add(t0, a2); t2 = maximum(t1, a3)")

CASES = [
    # x shape, w shape, strides, padding, groups: the route taken
    ((2, 8, 9, 9), (16, 8, 3, 3), (1, 1), ((1, 1), (1, 1)), 1),     # rows
    ((1, 16, 7, 6), (8, 16, 3, 3), (1, 1), ((1, 0), (2, 1)), 1),    # shifted products
    ((2, 3, 11, 11), (4, 3, 3, 3), (2, 2), ((0, 1), (1, 0)), 1),    # im2col, strided
    ((2, 8, 5, 5), (6, 8, 1, 1), (1, 1), ((0, 0), (0, 0)), 1),      # 1x1: the input itself
    ((2, 4, 6, 6), (6, 2, 3, 3), (1, 1), ((1, 1), (1, 1)), 2),      # two groups
    ((1, 130, 5, 4), (140, 130, 3, 3), (1, 1), ((1, 1), (0, 0)), 1),  # many channels: im2col
]


def _arrays(x_shape, w_shape, strides, padding, groups):
    attrs = {**_attrs(4, strides, padding, (1, 1), (1, 1), groups), "program": PROGRAM}
    attrs = ops.fused_convolution.check_attrs(attrs)
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    shape = ops.convolution.infer([type_of(x), type_of(w)], attrs, None)[0].shape
    bias = RNG.standard_normal(w_shape[0]).astype(np.float32)
    residual = RNG.standard_normal(shape).astype(np.float32)
    zero = np.broadcast_to(np.float32(0), shape)  # a splat slot
    return attrs, [x, w, bias, residual, zero], shape


def _unfused(args, shape, attrs) -> np.ndarray:
    """The convolution kernel's result, then the epilogue by numpy's float32 ufuncs."""
    product = np.empty(shape, np.float32)
    convolution(args[:2], [product], attrs, NO_CALLS)
    return np.maximum(product + args[2].reshape(1, -1, 1, 1) + args[3], args[4])


@pytest.mark.parametrize("tile_bytes", [rows.TILE_BYTES, 700])  # one tile; a few
@pytest.mark.parametrize("case", CASES)
def test_plan_and_kernel_give_the_unfused_bits(case, tile_bytes, monkeypatch) -> None:
    monkeypatch.setattr(rows, "TILE_BYTES", tile_bytes)
    monkeypatch.setattr(tiles, "TILE_BYTES", tile_bytes // 4)
    attrs, args, shape = _arrays(*case)
    want = _unfused(args, shape, attrs)
    x, w, *_ = args
    strides, padding, groups = case[2], case[3], case[4]
    exact = ref_conv(x.astype(np.float64), w.astype(np.float64), strides, padding, (1, 1),
                     (1, 1), groups)
    exact = np.maximum(exact + args[2].reshape(1, -1, 1, 1) + args[3], 0)
    np.testing.assert_allclose(want, exact, rtol=1e-4, atol=1e-4)

    out = np.full(shape, np.nan, np.float32)
    fused_convolution(args, [out], attrs, NO_CALLS)
    np.testing.assert_array_equal(out, want)

    out = np.full(shape, np.nan, np.float32)
    step = fused_convolution_plan(args, out, attrs, NO_CALLS,
                                  [False, True, True, False, True], ScratchPool())
    step()
    np.testing.assert_array_equal(out, want)
    args[0][...] = RNG.standard_normal(args[0].shape)  # the bound step follows its inputs
    args[3][...] = RNG.standard_normal(shape)
    step()
    np.testing.assert_array_equal(out, _unfused(args, shape, attrs))
