"""The layer norm planned once at load (`prepare_layer_norm`, blocks of whole rows, buffers
made once) gives the layer_norm kernel's bits, follows its input's later values, and
declines what it cannot plan."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir.kernels.normalize import layer_norm, prepare_layer_norm

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the constant row's 0/0


def _kernel(x: np.ndarray, eps: float) -> np.ndarray:
    out = np.empty_like(x)
    layer_norm([x], [out], {"dimension": x.ndim - 1, "epsilon": eps}, None)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("shape", [(16,), (4, 10), (1, 128, 768), (2, 300, 1024), (7, 3, 5)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_as_the_kernel(shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 5 + 2).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    flat[0, :2] = [np.nan, np.inf]  # a row of NaN
    flat[-1, :] = 1.5  # a constant row: variance 0, the result 0 / sqrt(eps)
    out = np.empty_like(x)
    run = prepare_layer_norm(x, out, x.ndim - 1, 1e-5)
    assert run is not None
    run()
    np.testing.assert_array_equal(out.view(np.uint8), _kernel(x, 1e-5).view(np.uint8))
    x *= -0.25  # the input slot is read afresh on every run
    run()
    np.testing.assert_array_equal(out.view(np.uint8), _kernel(x, 1e-5).view(np.uint8))


def test_in_place_gives_the_same_bits() -> None:
    x = np.random.default_rng(4).standard_normal((300, 100)).astype(np.float32)
    want = _kernel(x, 1e-12)
    run = prepare_layer_norm(x, x, 1, 1e-12)
    assert run is not None
    run()
    np.testing.assert_array_equal(x, want)


def test_declines_other_axes_dtypes_layouts_and_empty_arrays() -> None:
    x = np.ones((4, 6), np.float32)
    assert prepare_layer_norm(x, np.empty_like(x), 0, 1e-5) is None
    assert prepare_layer_norm(x.T, np.empty((6, 4), np.float32), 1, 1e-5) is None
    half = x.astype(np.float16)
    assert prepare_layer_norm(half, np.empty_like(half), 1, 1e-5) is None
    empty = np.ones((0, 6), np.float32)
    assert prepare_layer_norm(empty, np.empty_like(empty), 1, 1e-5) is None


def test_plans_sharing_one_scratch_pool_give_the_kernels_bits() -> None:
    """The executor binds a function's steps to one scratch pool (they run one at a time):
    two layer norms of other shapes, run in turn, each still get the kernel's bits."""
    from nxcc.ir.kernels.scratch_pool import ScratchPool

    rng = np.random.default_rng(5)
    pool = ScratchPool()
    xs = [rng.standard_normal(s).astype(np.float32) for s in ((3, 50, 768), (40, 33))]
    outs = [np.empty_like(x) for x in xs]
    runs = [prepare_layer_norm(x, o, x.ndim - 1, 1e-6, pool) for x, o in zip(xs, outs, strict=True)]
    for _ in range(2):
        for run, x, out in zip(runs, xs, outs, strict=True):
            assert run is not None
            run()
            np.testing.assert_array_equal(out.view(np.uint8), _kernel(x, 1e-6).view(np.uint8))
    assert pool.nbytes < sum(x.nbytes for x in xs)  # shared, not one buffer per plan
