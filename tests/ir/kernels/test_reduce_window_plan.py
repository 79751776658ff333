"""reduce_window's max / min fold planned once at load (`prepare_reduce_window`): the
kernel's values, with and without edge padding, the input and a non-constant init read
afresh on every run, and the cases it declines."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir import DType, Module
from nxcc.ir.computations import binary_computation
from nxcc.ir.kernels.common import pad_array, windows
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
                                         ("maximum", 0.5), ("add", 0.0), ("add", 0.25),
                                         ("multiply", 1.0)])
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


@pytest.mark.parametrize("padding", [((0, 0),) * 4, ((0, 0), (0, 0), (1, 1), (1, 0))])
def test_a_large_max_pool_is_folded_in_blocks_of_channels(padding, monkeypatch) -> None:
    """Blocks of a few channels per image (the last one shorter), sharing their
    intermediate: the kernel's values."""
    from nxcc.ir.kernels import windowed

    monkeypatch.setattr(windowed, "POOL_BLOCK_BYTES", 3 * 11 * 9 * 4)  # 3 channels' input
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 7, 11, 9)).astype(np.float32)
    attrs = {**POOL, "padding": padding}
    init = np.array(-np.inf, np.float32)
    assert len(windowed._pool_blocks(x, attrs["window_dimensions"], attrs["window_strides"],
                                     padding)) == 2 * 3
    out = np.full((2, 7, 5 + sum(padding[2]) // 2, 4), np.nan, np.float32)
    module, full, run = _plan("maximum", x, init, out, attrs, (False, True))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init], full, module))


def test_a_sum_pool_takes_the_kernels_order() -> None:
    """A 2x2 / 2 sum pool (an average pool's sum): init, then the offsets row by row, the
    kernel's rounding; the init is read on every run."""
    x = np.array([[1e8, 1.0, -1e8, 1.0], [1.0, 1.0, 1.0, 1.0]], np.float32)[None, None]
    attrs = {**POOL, "window_dimensions": (1, 1, 2, 2), "window_strides": (1, 1, 2, 2)}
    init = np.array(0, np.float32)
    out = np.empty((1, 1, 1, 2), np.float32)
    module, full, run = _plan("add", x, init, out, attrs, (False, False))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init], full, module))
    init[()] = 3.0
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init], full, module))


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


def test_declines_padded_or_wide_sums_narrow_types_and_base_dilation() -> None:
    x = np.zeros((1, 1, 5, 5), np.float32)
    out = np.empty((1, 1, 2, 2), np.float32)
    init = np.array(0, np.float32)
    padded = {**POOL, "padding": ((0, 0), (0, 0), (1, 1), (1, 1))}
    assert _plan("add", x, init, np.empty((1, 1, 3, 3), np.float32), padded,
                 (False, True))[2] is None
    wide = {**POOL, "window_dimensions": (1, 1, 9, 9), "window_strides": (1, 1, 1, 1)}
    big = np.zeros((1, 1, 9, 9), np.float32)
    assert _plan("add", big, init, np.empty((1, 1, 1, 1), np.float32), wide,
                 (False, True))[2] is None
    half = x.astype(np.float16)
    assert _plan("maximum", half, init.astype(np.float16), out.astype(np.float16), POOL,
                 (False, True))[2] is None
    dilated = {**POOL, "base_dilations": (1, 1, 2, 2)}
    assert _plan("maximum", x, init, np.empty((1, 1, 4, 4), np.float32), dilated,
                 (False, True))[2] is None


@pytest.mark.parametrize("opcode,init", [("maximum", -np.inf), ("maximum", 0.5),
                                         ("minimum", np.inf)])
def test_padded_pool_matches_the_kernel(opcode: str, init: float) -> None:
    """A 3x3 / 2 pool padded by one (ResNet's, DenseNet's): the kernel's values, which pad
    the input with init, without the planned fold padding anything."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 4, 12, 11)).astype(np.float32)
    attrs = {**POOL, "padding": ((0, 0), (0, 0), (1, 1), (1, 1))}
    init_value = np.array(init, np.float32)
    out = np.empty((1, 4, 6, 6), np.float32)
    module, full, run = _plan(opcode, x, init_value, out, attrs, (False, True))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, run1("reduce_window", [x, init_value], full, module))


def test_windows_all_in_padding_take_a_changing_init() -> None:
    """Padding wider than the window: the outputs over padding alone are the init, read on
    every run when it is not constant."""
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    init = np.array(-np.inf, np.float32)
    attrs = {"window_dimensions": (1, 2), "window_strides": (1, 1),
             "padding": ((0, 0), (3, 3)), "base_dilations": (1, 1), "window_dilations": (1, 1)}
    out = np.empty((1, 9), np.float32)
    _, _, run = _plan("maximum", x, init, out, attrs, (False, False))
    assert run is not None
    run()
    np.testing.assert_array_equal(out, [[-np.inf, -np.inf, 0, 1, 2, 3, 3, -np.inf, -np.inf]])
    init[()] = 2.5
    run()
    np.testing.assert_array_equal(out, [[2.5, 2.5, 2.5, 2.5, 2.5, 3, 3, 2.5, 2.5]])


@st.composite
def _pools(draw) -> tuple[np.ndarray, dict, tuple[int, ...]]:
    """A float32 array of rank 1-4 and a window that fits it, with strides and dilations."""
    rank = draw(st.integers(1, 4))
    shape, window, strides, dilations, counts, padding = [], [], [], [], [], []
    for _ in range(rank):
        w, s, d = draw(st.integers(1, 4)), draw(st.integers(1, 3)), draw(st.integers(1, 2))
        lo, hi = draw(st.integers(-2, 3)), draw(st.integers(-2, 3))
        n = draw(st.integers(max(1, (w - 1) * d + 1 - lo - hi), (w - 1) * d + 9))
        shape.append(n)
        window.append(w)
        strides.append(s)
        dilations.append(d)
        padding.append((lo, hi))
        counts.append((n + lo + hi - (w - 1) * d - 1) // s + 1)
    seed = draw(st.integers(0, 2**16))
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    attrs = {"window_dimensions": tuple(window), "window_strides": tuple(strides),
             "padding": tuple(padding), "base_dilations": (1,) * rank,
             "window_dilations": tuple(dilations)}
    return x, attrs, tuple(counts)


@settings(max_examples=60, deadline=None)
@given(_pools(), st.sampled_from(["maximum", "minimum"]))
def test_any_window_matches_the_naive_fold(pool, opcode: str) -> None:
    """Any rank, window, stride, dilation and edge padding (negative: a crop): the planned
    fold against the definition, on the input padded with init."""
    x, attrs, counts = pool
    init = np.array(-np.inf if opcode == "maximum" else np.inf, np.float32)
    out = np.empty(counts, np.float32)
    _, _, run = _plan(opcode, x, init, out, attrs, (False, True))
    assert run is not None
    run()
    low, high = ([p[i] for p in attrs["padding"]] for i in range(2))
    padded = pad_array(x, init, low, high, [0] * x.ndim)
    view = windows(padded, attrs["window_dimensions"], attrs["window_strides"],
                   attrs["window_dilations"])
    axes = tuple(range(x.ndim, 2 * x.ndim))
    want = view.max(axis=axes) if opcode == "maximum" else view.min(axis=axes)
    np.testing.assert_array_equal(out, want)
