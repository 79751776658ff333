"""pad planned once at load (`pad_plan`): the operand into its place and the value into the
borders, the kernel's values, inputs read afresh; cropping and interior padding left to the
kernel."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.kernels.shape import pad_plan
from tests.ir.kernels.fake_ctx import run1


@pytest.mark.parametrize(("low", "high"), [((0, 0, 1024), (0, 0, 0)), ((0, 0, 512), (0, 0, 512)),
                                           ((1, 0, 2), (2, 3, 0)), ((0, 0, 0), (0, 0, 0))])
@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_same_values_as_the_kernel(low: tuple, high: tuple, dtype: type) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 512)).astype(dtype)
    value = np.array(7, dtype)
    attrs = {"low": low, "high": high, "interior": (0, 0, 0)}
    out = np.full([n + a + b for n, a, b in zip(x.shape, low, high, strict=True)], -1, dtype)
    run = pad_plan([x, value], out, attrs, None, [False, True], ScratchPool())  # type: ignore[arg-type]
    assert run is not None
    for _ in range(2):
        run()
        np.testing.assert_array_equal(out, run1("pad", [x, value], attrs))
        x += 1  # read afresh
        value += 1


@pytest.mark.parametrize(("low", "high", "interior"), [((0, -1), (0, 0), (0, 0)),
                                                       ((0, 1), (0, 0), (0, 1))])
def test_cropping_and_interior_padding_are_left_to_the_kernel(low, high, interior) -> None:
    x = np.ones((2, 4), np.float32)
    attrs = {"low": low, "high": high, "interior": interior}
    shape = [n + a + b + max(n - 1, 0) * i for n, a, b, i in zip(x.shape, low, high, interior,
                                                                   strict=True)]
    assert pad_plan([x, np.array(0, np.float32)], np.empty(shape, np.float32), attrs,
                    None, [False, True], ScratchPool()) is None  # type: ignore[arg-type]
