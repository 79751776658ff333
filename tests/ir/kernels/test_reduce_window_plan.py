"""reduce_window's max / min fold planned once at load (`prepare_reduce_window`): the
kernel's values, the input and a non-constant init read afresh on every run, and the cases
it declines."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import DType, Module
from nxcc.ir.computations import binary_computation
from nxcc.ir.kernels.windowed import prepare_reduce_window
from tests.ir.kernels.fake_ctx import FakeCtx, run1

POOL = {"window_dimensions": (1, 1, 3, 3), "window_strides": (1, 1, 2, 2),
        "padding": ((0, 0),) * 4, "base_dilations": (1,) * 4, "window_dilations": (1,) * 4}


def _plan(opcode: str, x: np.ndarray, init: np.ndarray, out: np.ndarray,
          attrs: dict, constant: tuple[bool, bool]):
    module = Module("m")
    comp = binary_computation(module, opcode, DType.from_numpy(x.dtype))
    full = {**attrs, "computation": comp}
    return module, full, prepare_reduce_window([x, init], out, full, FakeCtx(module),
                                               constant)


@pytest.mark.parametrize("opcode,init", [("maximum", -np.inf), ("minimum", np.inf),
                                         ("maximum", 0.5)])
@pytest.mark.parametrize("dilation", [1, 2])
def test_same_values_as_the_kernel(opcode: str, init: float, dilation: int) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 15, 12)).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    attrs = {**POOL, "window_dilations": (1, 1, dilation, dilation)}
    init_value = np.array(init, np.float32)
    count = (12 - 2 * dilation - 1) // 2 + 1, (15 - 2 * dilation - 1) // 2 + 1
    out = np.empty((2, 3, count[1], count[0]), np.float32)
    module, full, run = _plan(opcode, x, init_value, out, attrs, (False, True))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init_value], full, module))
    x *= -1  # the input is read afresh
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init_value], full, module))


def test_a_non_constant_init_is_folded_on_every_run() -> None:
    x = -np.ones((1, 1, 5, 5), np.float32)
    init = np.array(-np.inf, np.float32)
    out = np.empty((1, 1, 2, 2), np.float32)
    _, _, run = _plan("maximum", x, init, out, POOL, (False, False))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, -1)
    init[()] = 2.0
    run()
    np.testing.assert_array_equal(out, 2)


def test_declines_padding_sums_and_narrow_types() -> None:
    x = np.zeros((1, 1, 5, 5), np.float32)
    out = np.empty((1, 1, 2, 2), np.float32)
    init = np.array(0, np.float32)
    padded = {**POOL, "padding": ((0, 0), (0, 0), (1, 1), (1, 1))}
    assert _plan("maximum", x, init, np.empty((1, 1, 3, 3), np.float32), padded,
                 (False, True))[2] is None
    assert _plan("add", x, init, out, POOL, (False, True))[2] is None
    half = x.astype(np.float16)
    assert _plan("maximum", half, init.astype(np.float16), out.astype(np.float16), POOL,
                 (False, True))[2] is None
