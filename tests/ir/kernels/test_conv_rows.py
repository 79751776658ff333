"""Stride-1 convolutions on whole padded rows (`conv_rows.prepare_conv_rows`) against a direct numpy
reference, for both methods and through the convolution kernel."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from nxcc.ir.kernels import conv_rows as rows
from nxcc.ir.kernels.conv_rows import ROWS, SHIFTED, prepare_conv_rows
from tests.ir.kernels.fake_ctx import run1

RNG = np.random.default_rng(11)


def reference(x: np.ndarray, w: np.ndarray, low, high) -> np.ndarray:
    padded = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (low[0], high[0]), (low[1], high[1])])
    win = sliding_window_view(padded, w.shape[2:], axis=(2, 3))  # (N, C, Ho, Wo, kh, kw)
    return np.einsum("nchwij,ocij->nohw", win, w.astype(np.float64))


@pytest.mark.parametrize("tile_bytes", [rows.TILE_BYTES, 1, 700])  # one tile; one row each;
@pytest.mark.parametrize("how", [ROWS, SHIFTED])                   # a few, the last shorter
@pytest.mark.parametrize(("shape", "kernel", "low", "high"), [
    ((1, 8, 9, 9), (4, 8, 3, 3), (1, 1), (1, 1)),
    ((2, 6, 7, 11), (5, 6, 3, 2), (0, 2), (1, 0)),   # two images, asymmetric, non-square
    ((1, 3, 5, 5), (2, 3, 5, 5), (0, 0), (0, 0)),    # one output position
    ((1, 4, 1, 6), (3, 4, 1, 3), (0, 1), (0, 1)),    # one row
])
def test_both_methods_match_the_reference(how: str, shape, kernel, low, high, tile_bytes,
                                          monkeypatch) -> None:
    monkeypatch.setattr(rows, "TILE_BYTES", tile_bytes)
    for dtype, tol in ((np.float32, 1e-5), (np.float64, 1e-12)):
        x = RNG.standard_normal(shape).astype(dtype)
        w = RNG.standard_normal(kernel).astype(dtype)
        want = reference(x, w, low, high)
        out = np.full(want.shape, np.nan, dtype)
        prepare_conv_rows(x, w, low, high, how, out, weights_fixed=True)()
        np.testing.assert_allclose(out, want, rtol=tol, atol=tol)


def test_the_method_follows_the_channel_counts() -> None:
    assert rows.method(128, 32) == SHIFTED   # DenseNet's 3x3 convolutions
    assert rows.method(16, 64) == ROWS       # SqueezeNet's expand convolutions
    assert rows.method(256, 256) is None     # im2col


ATTRS = dict(window_strides=[1, 1], lhs_dilation=[1, 1], rhs_dilation=[1, 1],
             input_batch_dim=0, input_feature_dim=1, input_spatial_dims=[2, 3],
             kernel_output_feature_dim=0, kernel_input_feature_dim=1, kernel_spatial_dims=[2, 3],
             output_batch_dim=0, output_feature_dim=1, output_spatial_dims=[2, 3],
             feature_group_count=1, batch_group_count=1)


@pytest.mark.parametrize(("c", "o", "route"), [(8, 2, SHIFTED), (4, 6, ROWS), (200, 150, None)])
def test_the_convolution_kernel_gives_the_same_numbers_by_every_route(c: int, o: int, route,
                                                                     monkeypatch) -> None:
    from nxcc.ir.kernels import convolution

    taken: list = []

    def spy(*args):
        taken.append(args[4])
        return prepare_conv_rows(*args)

    monkeypatch.setattr(convolution, "prepare_conv_rows", spy)
    x = RNG.standard_normal((1, c, 6, 6)).astype(np.float32)
    w = RNG.standard_normal((o, c, 3, 3)).astype(np.float32)
    got = run1("convolution", [x, w], {**ATTRS, "padding": [[1, 1], [1, 1]]})
    np.testing.assert_allclose(got, reference(x, w, (1, 1), (1, 1)), rtol=1e-4, atol=1e-4)
    assert taken == ([route] if route else [])


@pytest.mark.parametrize("how", [ROWS, SHIFTED])
def test_a_prepared_convolution_follows_its_input_and_unfixed_weights(how: str) -> None:
    x = RNG.standard_normal((2, 6, 5, 7)).astype(np.float32)
    w = RNG.standard_normal((3, 6, 3, 3)).astype(np.float32)
    out = np.empty((2, 3, 5, 7), np.float32)
    run = prepare_conv_rows(x, w, (1, 1), (1, 1), how, out, weights_fixed=False)
    for _ in range(2):
        run()
        np.testing.assert_allclose(out, reference(x, w, (1, 1), (1, 1)), rtol=1e-4, atol=1e-4)
        x[...] = RNG.standard_normal(x.shape)
        w[...] = RNG.standard_normal(w.shape)


def test_the_executor_binds_a_row_route_convolution_once() -> None:
    """Through the NEFF lowering and the executor: the bound step is the prepared one and
    gives the reference numbers for new inputs."""
    from nxcc.backend.program.lower import WeightTable, lower_module
    from nxcc.backend.runtime.executor import ProgramExecutor
    from nxcc.ir.parser import parse_module

    text = """\
module @m {
  func @main(%x: f32[1,16,9,9], %w: f32[4,16,3,3]) -> (f32[1,4,9,9]) {
    %c = convolution(%x, %w) {window_strides = [1, 1], padding = [[1, 1], [1, 1]], lhs_dilation = [1, 1], rhs_dilation = [1, 1], input_batch_dim = 0, input_feature_dim = 1, input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, output_feature_dim = 1, output_spatial_dims = [2, 3]} : f32[1,4,9,9]
    return %c
  }
}
"""
    table = WeightTable()
    ex = ProgramExecutor(lower_module(parse_module(text), table), table.arrays)
    for _ in range(2):
        x = RNG.standard_normal((1, 16, 9, 9)).astype(np.float32)
        w = RNG.standard_normal((4, 16, 3, 3)).astype(np.float32)
        (got,) = ex.run([x, w])
        np.testing.assert_allclose(got, reference(x, w, (1, 1), (1, 1)), rtol=1e-4, atol=1e-4)
    step = ex.functions["main"].bound(ex).steps[0]
    assert step.__qualname__.startswith("prepare_conv_rows")


def test_convolutions_of_one_function_share_scratch_and_rezero_their_borders() -> None:
    """Two row-route convolutions of different padding in one bound function: the second
    finds the first's data in the shared buffer and must not read it as padding."""
    from nxcc.backend.program.lower import WeightTable, lower_module
    from nxcc.backend.runtime.executor import ProgramExecutor
    from nxcc.ir.parser import parse_module

    dims = ("lhs_dilation = [1, 1], rhs_dilation = [1, 1], input_batch_dim = 0, "
            "input_feature_dim = 1, input_spatial_dims = [2, 3], kernel_input_feature_dim = 1, "
            "kernel_output_feature_dim = 0, kernel_spatial_dims = [2, 3], output_batch_dim = 0, "
            "output_feature_dim = 1, output_spatial_dims = [2, 3]")
    text = f"""\
module @m {{
  func @main(%x: f32[1,8,9,9], %w: f32[4,8,3,3], %v: f32[8,4,5,5]) -> (f32[1,8,9,9]) {{
    %c = convolution(%x, %w) {{window_strides = [1, 1], padding = [[1, 1], [1, 1]], {dims}}} : f32[1,4,9,9]
    %d = convolution(%c, %v) {{window_strides = [1, 1], padding = [[2, 2], [2, 2]], {dims}}} : f32[1,8,9,9]
    return %d
  }}
}}
"""
    table = WeightTable()
    ex = ProgramExecutor(lower_module(parse_module(text), table), table.arrays)
    for _ in range(2):
        x = RNG.standard_normal((1, 8, 9, 9)).astype(np.float32) + 5  # no zeros to confuse
        w = RNG.standard_normal((4, 8, 3, 3)).astype(np.float32)
        v = RNG.standard_normal((8, 4, 5, 5)).astype(np.float32)
        (got,) = ex.run([x, w, v])
        c = reference(x, w, (1, 1), (1, 1)).astype(np.float32)
        np.testing.assert_allclose(got, reference(c, v, (2, 2), (2, 2)), rtol=1e-4, atol=1e-3)
    steps = ex.functions["main"].bound(ex).steps
    assert all(s.__qualname__.startswith("prepare_conv_rows") for s in steps)


def test_scratch_reservations_share_the_buffer_from_offset_0() -> None:
    from nxcc.ir.kernels.scratch_pool import ScratchPool

    pool = ScratchPool()
    a = pool.reserve([((10,), np.dtype(np.float32)), ((3, 2), np.dtype(np.float64))])
    b = pool.reserve([((100,), np.dtype(np.float32))])
    assert pool.nbytes == 448  # 400 rounded up to 64 bytes; the larger of 64 + 64 and it
    (xa, ya), (xb,) = a.arrays(), b.arrays()
    assert np.shares_memory(xa, xb) and ya.ctypes.data % 64 == 0 and ya.shape == (3, 2)
    with pytest.raises(RuntimeError):
        pool.reserve([((1000,), np.dtype(np.float32))])


@pytest.mark.parametrize(("x_shape", "w_shape", "pad"), [
    ((1, 4, 2, 2), (2, 4, 3, 3), 0),   # the window larger than the image: no output
    ((0, 4, 5, 5), (2, 4, 3, 3), 1),   # no image
    ((1, 0, 5, 5), (2, 0, 3, 3), 1),   # no input channel: zeros
])
def test_empty_convolutions(x_shape, w_shape, pad) -> None:
    x = np.ones(x_shape, np.float32)
    w = np.ones(w_shape, np.float32)
    got = run1("convolution", [x, w], {**ATTRS, "padding": [[pad, pad], [pad, pad]]})
    size = [max(n + 2 * pad - k + 1, 0) for n, k in zip(x_shape[2:], w_shape[2:], strict=True)]
    want = (reference(x, w, (pad, pad), (pad, pad)) if min(size) > 0 else
            np.zeros((x_shape[0], w_shape[0], *size)))
    np.testing.assert_array_equal(got, want)


def test_a_window_as_large_as_a_weight_gradients_takes_im2col(monkeypatch) -> None:
    from nxcc.ir.kernels import convolution

    taken: list = []
    monkeypatch.setattr(convolution, "prepare_conv_rows", lambda *a: taken.append(a[4]))
    x = RNG.standard_normal((1, 64, 10, 10)).astype(np.float32)
    w = RNG.standard_normal((2, 64, 8, 8)).astype(np.float32)  # 64 offsets > MAX_WINDOW
    got = run1("convolution", [x, w], {**ATTRS, "padding": [[0, 0], [0, 0]]})
    np.testing.assert_allclose(got, reference(x, w, (0, 0), (0, 0)), rtol=1e-4, atol=1e-3)
    assert taken == []
