"""The softmax planned once at load (`prepare_softmax`, blocks of whole rows) gives the
softmax kernel's bits, follows its input's later values, and declines what it cannot plan."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir.kernels.normalize import prepare_softmax, softmax

# the executor runs bound steps with floating-point errors ignored (a masked row's inf - inf)
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _kernel(x: np.ndarray) -> np.ndarray:
    out = np.empty_like(x)
    softmax([x], [out], {"dimension": x.ndim - 1}, None)  # type: ignore[arg-type]
    return out


@pytest.mark.parametrize("shape", [(4, 10), (3, 12, 128, 128), (5, 40000), (7, 3, 1000)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_same_bits_as_the_kernel(shape: tuple[int, ...], dtype: type) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(shape) * 8).astype(dtype)
    flat = x.reshape(-1, shape[-1])
    flat[0, :4] = [-1e4, np.finfo(dtype).min, -np.inf, np.nan]  # masked scores and a NaN
    flat[-1, :] = -np.inf  # a fully masked row
    out = np.empty_like(x)
    run = prepare_softmax(x, out, x.ndim - 1)
    assert run is not None
    run()
    np.testing.assert_array_equal(out.view(np.uint8), _kernel(x).view(np.uint8))
    x *= -0.5  # the input slot is read afresh on every run
    run()
    np.testing.assert_array_equal(out.view(np.uint8), _kernel(x).view(np.uint8))


def test_in_place_gives_the_same_bits() -> None:
    x = np.random.default_rng(2).standard_normal((300, 100)).astype(np.float32)
    want = _kernel(x)
    run = prepare_softmax(x, x, 1)
    assert run is not None
    run()
    np.testing.assert_array_equal(x, want)


def test_declines_other_axes_dtypes_layouts_and_empty_arrays() -> None:
    x = np.ones((4, 6), np.float32)
    assert prepare_softmax(x, np.empty_like(x), 0) is None
    assert prepare_softmax(x.T, np.empty((6, 4), np.float32), 1) is None
    half = x.astype(np.float16)
    assert prepare_softmax(half, np.empty_like(half), 1) is None
    empty = np.ones((0, 6), np.float32)
    assert prepare_softmax(empty, np.empty_like(empty), 1) is None
