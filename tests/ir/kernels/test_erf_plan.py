"""erf planned once for a small fixed block (`prepare_erf_float32`) gives `erf_float32`'s
bits, reads its input afresh on every run, and declines what it does not plan."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir.kernels.erf import erf_float32, prepare_erf_float32

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # a NaN's index


@pytest.mark.parametrize("shape", [(1,), (4, 32), (2048,), (3, 5, 7)])
def test_same_bits_as_the_kernel(shape: tuple[int, ...]) -> None:
    x = (np.random.default_rng(3).standard_normal(shape) * 3).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, -0.0, np.inf, -np.inf, 1e-45, 5.0][:flat.size]
    out = np.empty_like(x)
    run = prepare_erf_float32(x, out)
    assert run is not None
    run()
    np.testing.assert_array_equal(out.view(np.uint32), erf_float32(x).view(np.uint32))
    x *= -0.25  # the input is read afresh on every run
    run()
    np.testing.assert_array_equal(out.view(np.uint32), erf_float32(x).view(np.uint32))


def test_declines_large_strided_and_float64_blocks() -> None:
    big = np.zeros(2049, np.float32)
    assert prepare_erf_float32(big, np.empty_like(big)) is None
    strided = np.zeros((8, 8), np.float32)[:, ::2]
    assert prepare_erf_float32(strided, np.empty((8, 4), np.float32)) is None
    wide = np.zeros(8)
    assert prepare_erf_float32(wide, np.empty_like(wide)) is None
