"""reduce_window's max / min fold planned once at load (`prepare_reduce_window`): the
kernel's values, the input and a non-constant init read afresh on every run, and the cases
it declines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir import DType, Module
from nxcc.ir.computations import binary_computation
from nxcc.ir.kernels.common import windows
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


@st.composite
def _pools(draw) -> tuple[np.ndarray, dict, tuple[int, ...]]:
    """A float32 array of rank 1-4 and a window that fits it, with strides and dilations."""
    rank = draw(st.integers(1, 4))
    shape, window, strides, dilations, counts = [], [], [], [], []
    for _ in range(rank):
        w, s, d = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        n = draw(st.integers((w - 1) * d + 1, (w - 1) * d + 9))
        shape.append(n)
        window.append(w)
        strides.append(s)
        dilations.append(d)
        counts.append((n - (w - 1) * d - 1) // s + 1)
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    attrs = {"window_dimensions": tuple(window), "window_strides": tuple(strides),
             "padding": ((0, 0),) * rank, "base_dilations": (1,) * rank,
             "window_dilations": tuple(dilations)}
    return x, attrs, tuple(counts)


@settings(max_examples=60, deadline=None)
@given(_pools(), st.sampled_from(["maximum", "minimum"]))
def test_any_window_matches_the_naive_fold(pool, opcode: str) -> None:
    """Any rank, window, stride and dilation: the planned fold against the definition."""
    x, attrs, counts = pool
    init = np.array(-np.inf if opcode == "maximum" else np.inf, np.float32)
    out = np.empty(counts, np.float32)
    _, _, run = _plan(opcode, x, init, out, attrs, (False, True))
    assert run is not None
    run()
    view = windows(x, attrs["window_dimensions"], attrs["window_strides"],
                   attrs["window_dilations"])
    axes = tuple(range(x.ndim, 2 * x.ndim))
    want = view.max(axis=axes) if opcode == "maximum" else view.min(axis=axes)
    np.testing.assert_array_equal(out, want)
