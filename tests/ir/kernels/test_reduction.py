"""reduce, reduce_window, select_and_scatter against numpy / naive references."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from nxcc.ir import Builder, DType, Module, Value
from nxcc.ir.computations import binary_computation, compare_computation
from tests.ir.kernels.fake_ctx import FakeCtx, run1, run_op, scalar_function

RNG = np.random.default_rng(5)


def _slow_add(module: Module, dtype: DType) -> str:
    """a + b written as a - (-b): not recognisable as one binary op (general path)."""
    def body(b: Builder, p: list[Value]) -> list[Value]:
        return [b.subtract(p[0], b.negate(p[1]))]
    return scalar_function(module, f"slow_add_{dtype.value}", [dtype, dtype], body)


def _argmax(module: Module) -> str:
    """(value, index) pairs: larger value wins, ties go to the smaller index."""
    def body(b: Builder, p: list[Value]) -> list[Value]:
        av, ai, bv, bi = p
        gt = b.compare(av, bv, direction="GT")
        eq = b.compare(av, bv, direction="EQ")
        lt = b.compare(ai, bi, direction="LT")
        take_a = b.op("or", [gt, b.op("and", [eq, lt])])
        return [b.select(take_a, av, bv), b.select(take_a, ai, bi)]
    return scalar_function(module, "argmax", [DType.F32, DType.S32, DType.F32, DType.S32], body)


@pytest.mark.parametrize("opcode,ref", [("add", np.sum), ("maximum", np.max),
                                        ("minimum", np.min), ("multiply", np.prod)])
@pytest.mark.parametrize("dims", [(0,), (1, 2), (0, 2), (), (0, 1, 2)])
def test_reduce_fast(opcode: str, ref, dims) -> None:
    module = Module("m")
    comp = binary_computation(module, opcode, DType.F32)
    x = RNG.uniform(0.5, 1.5, (3, 4, 5)).astype(np.float32)
    init = {"add": 1.5, "maximum": 1.2, "minimum": 0.7, "multiply": 2.0}[opcode]
    got = run1("reduce", [x, np.array(init, np.float32)],
               {"dimensions": dims, "computation": comp}, module)
    combine = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum,
               "multiply": np.multiply}[opcode]
    want = combine(ref(x.astype(np.float64), axis=dims), init) if dims else combine(x, init)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_reduce_general_path_matches() -> None:
    module = Module("m")
    comp = _slow_add(module, DType.S32)
    x = RNG.integers(-50, 50, (7, 13)).astype(np.int32)
    ctx = FakeCtx(module)
    (got,) = run_op("reduce", [x, np.array(3, np.int32)],
                    {"dimensions": (1,), "computation": comp}, module, ctx)
    np.testing.assert_array_equal(got, x.sum(1) + 3)
    assert 0 < len(ctx.calls) <= 6  # log-depth tree plus the init fold


def test_reduce_pred_and_int_ops() -> None:
    module = Module("m")
    x = RNG.integers(0, 2, (4, 6)).astype(bool)
    for opcode, ref in (("and", np.all), ("or", np.any)):
        comp = binary_computation(module, opcode, DType.PRED)
        got = run1("reduce", [x, np.array(opcode == "and")],
                   {"dimensions": (1,), "computation": comp}, module)
        np.testing.assert_array_equal(got, ref(x, axis=1))
    y = RNG.integers(-100, 100, (4, 6)).astype(np.int8)
    comp = binary_computation(module, "add", DType.S8)
    got = run1("reduce", [y, np.array(0, np.int8)], {"dimensions": (1,), "computation": comp},
               module)
    np.testing.assert_array_equal(got, y.astype(np.int64).sum(1).astype(np.int8))


def test_reduce_bf16_accumulates_in_f32() -> None:
    module = Module("m")
    comp = binary_computation(module, "add", DType.BF16)
    x = np.full((1024,), 1.0, ml_dtypes.bfloat16)
    got = run1("reduce", [x, np.array(0, ml_dtypes.bfloat16)],
               {"dimensions": (0,), "computation": comp}, module)
    assert float(got) == 1024.0


def test_reduce_variadic_argmax() -> None:
    module = Module("m")
    comp = _argmax(module)
    x = RNG.integers(0, 5, (6, 11)).astype(np.float32)  # many ties
    idx = np.broadcast_to(np.arange(11, dtype=np.int32), x.shape)
    values, indices = run_op("reduce", [x, idx, np.array(-np.inf, np.float32),
                                        np.array(0, np.int32)],
                             {"dimensions": (1,), "computation": comp}, module)
    np.testing.assert_array_equal(values, x.max(1))
    np.testing.assert_array_equal(indices, x.argmax(1))


def test_reduce_empty_dimension() -> None:
    module = Module("m")
    for comp in (binary_computation(module, "add", DType.F32), _slow_add(module, DType.F32)):
        got = run1("reduce", [np.zeros((3, 0), np.float32), np.array(4, np.float32)],
                   {"dimensions": (1,), "computation": comp}, module)
        np.testing.assert_array_equal(got, [4, 4, 4])


def ref_reduce_window(x, init, fn, window, strides, padding, base_dil, win_dil):
    rank = x.ndim
    out_shape = []
    for d in range(rank):
        base = (x.shape[d] - 1) * base_dil[d] + 1
        padded = base + padding[d][0] + padding[d][1]
        span = (window[d] - 1) * win_dil[d] + 1
        out_shape.append(max(0, (padded - span) // strides[d] + 1) if padded >= span else 0)
    out = np.empty(out_shape, np.float64)
    for o in itertools.product(*(range(n) for n in out_shape)):
        acc = init
        for w in itertools.product(*(range(n) for n in window)):
            val = init
            src = []
            for d in range(rank):
                pos = o[d] * strides[d] + w[d] * win_dil[d] - padding[d][0]
                if pos < 0 or pos % base_dil[d] or pos // base_dil[d] >= x.shape[d]:
                    break
                src.append(pos // base_dil[d])
            else:
                val = x[tuple(src)]
            acc = fn(acc, val)
        out[o] = acc
    return out


WINDOW_CASES = [
    ((2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ((3, 3), (2, 2), ((1, 1), (1, 1)), (1, 1), (1, 1)),
    ((3, 2), (1, 3), ((2, 0), (-1, 2)), (1, 1), (2, 1)),
    ((2, 2), (1, 1), ((0, 1), (1, 0)), (2, 3), (1, 1)),
    ((1, 5), (1, 1), ((0, 0), (4, 0)), (1, 1), (1, 1)),  # a cumulative sum
]


@pytest.mark.parametrize("case", WINDOW_CASES, ids=[str(i) for i in range(len(WINDOW_CASES))])
@pytest.mark.parametrize("opcode", ["maximum", "add", "slow_add"])
def test_reduce_window(case, opcode: str) -> None:
    window, strides, padding, base_dil, win_dil = case
    module = Module("m")
    if opcode == "slow_add":
        comp = _slow_add(module, DType.F64)
    else:
        comp = binary_computation(module, opcode, DType.F64)
    x = RNG.normal(size=(5, 6))
    init = -np.inf if opcode == "maximum" else 0.0
    got = run1("reduce_window", [x, np.array(init)], {
        "window_dimensions": window, "window_strides": strides, "padding": padding,
        "base_dilations": base_dil, "window_dilations": win_dil, "computation": comp}, module)
    fn = max if opcode == "maximum" else (lambda a, b: a + b)
    want = ref_reduce_window(x, init, fn, window, strides, padding, base_dil, win_dil)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", WINDOW_CASES, ids=[str(i) for i in range(len(WINDOW_CASES))])
@pytest.mark.parametrize("opcode,dtype,init", [
    ("maximum", DType.F32, 1.0), ("minimum", DType.F32, np.inf),
    ("minimum", DType.F32, -1.0), ("maximum", DType.S32, 1), ("minimum", DType.S32, 2**31 - 1),
])
def test_max_and_min_windows_folded_by_dimension(case, opcode: str, dtype: DType,
                                                 init: float) -> None:
    """Maximum and minimum fold one window dimension at a time: the values of the naive
    fold, an init that is not the identity folded in, NaN kept."""
    window, strides, padding, base_dil, win_dil = case
    module = Module("m")
    comp = binary_computation(module, opcode, dtype)
    x = (RNG.normal(size=(5, 6)) * (1 if dtype.is_float else 2)).astype(dtype.numpy)
    if dtype.is_float:
        x[1, 2] = np.nan
    got = run1("reduce_window", [x, np.array(init, dtype.numpy)], {
        "window_dimensions": window, "window_strides": strides, "padding": padding,
        "base_dilations": base_dil, "window_dilations": win_dil, "computation": comp}, module)

    def fn(a, b):
        if np.isnan(a) or np.isnan(b):
            return np.nan
        return max(a, b) if opcode == "maximum" else min(a, b)

    want = ref_reduce_window(x.astype(np.float64), float(init), fn, window, strides, padding,
                             base_dil, win_dil)
    np.testing.assert_array_equal(got.astype(np.float64), want)


@pytest.mark.parametrize("opcode", ["add", "maximum"])
def test_reduce_window_large_window(opcode: str) -> None:
    """A window of more than 64 elements (ufunc.reduce over the window view)."""
    module = Module("m")
    comp = binary_computation(module, opcode, DType.F32)
    x = RNG.normal(size=(2, 100)).astype(np.float32)
    got = run1("reduce_window", [x, np.array(0, np.float32)], {
        "window_dimensions": (1, 100), "window_strides": (1, 1), "padding": ((0, 0), (99, 0)),
        "base_dilations": (1, 1), "window_dilations": (1, 1), "computation": comp}, module)
    if opcode == "add":
        np.testing.assert_allclose(got, np.cumsum(x, axis=1), rtol=1e-4, atol=1e-5)
    else:
        np.testing.assert_array_equal(got, np.maximum(np.maximum.accumulate(x, axis=1), 0))


def test_max_pool_bf16() -> None:
    module = Module("m")
    comp = binary_computation(module, "maximum", DType.BF16)
    x = RNG.normal(size=(4, 6)).astype(ml_dtypes.bfloat16)
    got = run1("reduce_window", [x, np.array(-np.inf, ml_dtypes.bfloat16)], {
        "window_dimensions": (2, 3), "window_strides": (2, 3), "padding": ((0, 0), (0, 0)),
        "base_dilations": (1, 1), "window_dilations": (1, 1), "computation": comp}, module)
    assert got.dtype == ml_dtypes.bfloat16
    want = x.astype(np.float32).reshape(2, 2, 2, 3).max(axis=(1, 3))
    np.testing.assert_array_equal(got.astype(np.float32), want)


def test_avg_pool_nchw() -> None:
    module = Module("m")
    comp = binary_computation(module, "add", DType.F32)
    x = RNG.normal(size=(2, 3, 6, 6)).astype(np.float32)
    got = run1("reduce_window", [x, np.array(0, np.float32)], {
        "window_dimensions": (1, 1, 2, 2), "window_strides": (1, 1, 2, 2),
        "padding": ((0, 0),) * 4, "base_dilations": (1,) * 4, "window_dilations": (1,) * 4,
        "computation": comp}, module) / 4
    want = x.reshape(2, 3, 3, 2, 3, 2).mean(axis=(3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_reduce_window_variadic() -> None:
    module = Module("m")
    comp = _argmax(module)
    x = RNG.integers(0, 4, (7,)).astype(np.float32)
    idx = np.arange(7, dtype=np.int32)
    values, indices = run_op("reduce_window", [x, idx, np.array(-np.inf, np.float32),
                                               np.array(0, np.int32)], {
        "window_dimensions": (3,), "window_strides": (2,), "padding": ((0, 0),),
        "base_dilations": (1,), "window_dilations": (1,), "computation": comp}, module)
    for k in range(3):
        np.testing.assert_array_equal(values[k], x[2 * k:2 * k + 3].max())
        assert indices[k] == 2 * k + np.argmax(x[2 * k:2 * k + 3])


def ref_select_and_scatter(x, source, init, window, strides, padding, keep):
    out = np.full(x.shape, init, np.float64)
    for o in itertools.product(*(range(n) for n in source.shape)):
        best = None
        for w in itertools.product(*(range(n) for n in window)):
            pos = tuple(o[d] * strides[d] + w[d] - padding[d][0] for d in range(x.ndim))
            if any(p < 0 or p >= n for p, n in zip(pos, x.shape, strict=True)):
                continue
            if best is None or not keep(x[best], x[pos]):
                best = pos
        if best is not None:
            out[best] += source[o]
    return out


def _ge_and_true(module: Module) -> str:
    """compare GE written with an extra op (general select path)."""
    def body(b: Builder, p: list[Value]) -> list[Value]:
        ge = b.compare(p[0], p[1], direction="GE")
        return [b.op("and", [ge, b.constant(True)])]
    return scalar_function(module, "ge_slow", [DType.F64, DType.F64], body)


@pytest.mark.parametrize("direction", ["GE", "GT", "LE", "LT", "slow"])
@pytest.mark.parametrize("window,strides,padding", [
    ((2, 2), (2, 2), ((0, 0), (0, 0))),
    ((3, 3), (2, 2), ((1, 1), (1, 1))),
    ((3, 2), (1, 1), ((0, 2), (1, 0))),
])
def test_select_and_scatter(direction: str, window, strides, padding) -> None:
    module = Module("m")
    if direction == "slow":
        select = _ge_and_true(module)
        keep = np.greater_equal
    else:
        select = compare_computation(module, direction, [DType.F64])
        keep = {"GE": np.greater_equal, "GT": np.greater, "LE": np.less_equal,
                "LT": np.less}[direction]
    scatter = binary_computation(module, "add", DType.F64)
    x = RNG.integers(0, 4, (6, 7)).astype(np.float64)  # ties matter
    out_shape = [max(0, (n + lo + hi - w) // s + 1) for n, w, s, (lo, hi) in
                 zip(x.shape, window, strides, padding, strict=True)]
    source = RNG.normal(size=out_shape)
    got = run1("select_and_scatter", [x, source, np.array(0.5)], {
        "window_dimensions": window, "window_strides": strides, "padding": padding,
        "select": select, "scatter": scatter}, module)
    want = ref_select_and_scatter(x, source, 0.5, window, strides, padding, keep)
    np.testing.assert_allclose(got, want, rtol=1e-12)
