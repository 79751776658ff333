"""Property: dot_general, convolution and reduce_window gradients against finite
differences, on random shapes, dimension orders, strides, paddings, dilations and groups."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir.computations import binary_computation
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from tests.passes.autodiff.gradcheck import check_gradients

SETTINGS = settings(max_examples=10, deadline=None)
seeds = st.integers(0, 2**16)


def _normal(seed: int, shape) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=tuple(shape))


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_dot_general(data: st.DataObject, seed: int) -> None:
    """Batch, contracting and free dims of each operand in random positions."""
    nb, nc = data.draw(st.integers(0, 1)), data.draw(st.integers(1, 2))
    lf, rf = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 2))
    sizes = {k: data.draw(st.integers(1, 3)) for k in
             [*(f"b{i}" for i in range(nb)), *(f"c{i}" for i in range(nc)),
              *(f"l{i}" for i in range(lf)), *(f"r{i}" for i in range(rf))]}
    lhs_dims = data.draw(st.permutations([k for k in sizes if k[0] in "bcl"]))
    rhs_dims = data.draw(st.permutations([k for k in sizes if k[0] in "bcr"]))
    attrs = {
        "lhs_batch_dims": tuple(lhs_dims.index(f"b{i}") for i in range(nb)),
        "rhs_batch_dims": tuple(rhs_dims.index(f"b{i}") for i in range(nb)),
        "lhs_contracting_dims": tuple(lhs_dims.index(f"c{i}") for i in range(nc)),
        "rhs_contracting_dims": tuple(rhs_dims.index(f"c{i}") for i in range(nc)),
    }
    inputs = {"x": _normal(seed, [sizes[k] for k in lhs_dims]),
              "y": _normal(seed + 1, [sizes[k] for k in rhs_dims])}
    check_gradients(lambda b, p: b.op("dot_general", p, attrs), inputs, seed)


@SETTINGS
@given(data=st.data(), seed=seeds)
def test_convolution(data: st.DataObject, seed: int) -> None:
    """2-D convolution in NCHW/OIHW or NHWC/HWIO layouts, with strides, padding, dilations
    and feature groups."""
    groups = data.draw(st.sampled_from([1, 1, 2]))
    n, cin, cout = data.draw(st.integers(1, 2)), groups * data.draw(st.integers(1, 2)), \
        groups * data.draw(st.integers(1, 2))
    kh, kw = data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2))
    h, w = data.draw(st.integers(kh, 5)), data.draw(st.integers(kw, 4))
    strides = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    padding = tuple((data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1)))
                    for _ in range(2))
    lhs_dil = (data.draw(st.integers(1, 2)), 1)
    rhs_dil = (1, data.draw(st.integers(1, 2)))
    if (w - 1) * lhs_dil[1] + 1 + sum(padding[1]) < (kw - 1) * rhs_dil[1] + 1:
        rhs_dil = (1, 1)
    nhwc = data.draw(st.booleans())
    if nhwc:
        x_shape, k_shape = (n, h, w, cin), (kh, kw, cin // groups, cout)
        dims = dict(input_batch_dim=0, input_feature_dim=3, input_spatial_dims=(1, 2),
                    kernel_input_feature_dim=2, kernel_output_feature_dim=3,
                    kernel_spatial_dims=(0, 1), output_batch_dim=0, output_feature_dim=3,
                    output_spatial_dims=(1, 2))
    else:
        x_shape, k_shape = (n, cin, h, w), (cout, cin // groups, kh, kw)
        dims = dict(input_batch_dim=0, input_feature_dim=1, input_spatial_dims=(2, 3),
                    kernel_input_feature_dim=1, kernel_output_feature_dim=0,
                    kernel_spatial_dims=(2, 3), output_batch_dim=0, output_feature_dim=1,
                    output_spatial_dims=(2, 3))
    attrs = dict(dims, window_strides=strides, padding=padding, lhs_dilation=lhs_dil,
                 rhs_dilation=rhs_dil, feature_group_count=groups)
    inputs = {"x": _normal(seed, x_shape), "k": _normal(seed + 1, k_shape)}
    check_gradients(lambda b, p: b.op("convolution", p, attrs), inputs, seed)


@SETTINGS
@given(data=st.data(), seed=seeds, opcode=st.sampled_from(["add", "maximum"]))
def test_reduce_window_pooling(data: st.DataObject, seed: int, opcode: str) -> None:
    """Average (sum) and max pooling over the two minor dims of an NCHW tensor."""
    h, w = data.draw(st.integers(2, 6)), data.draw(st.integers(2, 5))
    window = (1, 1, data.draw(st.integers(1, 3)), data.draw(st.integers(1, 2)))
    strides = (1, 1, data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    # padding narrower than the window: no window lies wholly in padding
    padding = ((0, 0), (0, 0), *((data.draw(st.integers(0, k - 1)),
                                  data.draw(st.integers(0, k - 1))) for k in window[2:]))
    x = np.random.default_rng(seed).permutation(2 * h * w).reshape(1, 2, h, w) * 0.05
    init = 0.0 if opcode == "add" else -np.inf

    def build(b, p):
        return b.op("reduce_window", [p[0], b.splat(init, TensorType(DType.F64, ()))], {
            "window_dimensions": window, "window_strides": strides,
            "base_dilations": (1,) * 4, "window_dilations": (1,) * 4, "padding": padding,
            "computation": binary_computation(b.module, opcode, DType.F64)})

    check_gradients(build, {"x": x}, seed)
