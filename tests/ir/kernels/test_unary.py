"""Unary elementwise kernels against numpy references over several dtypes."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from nxcc.ir.kernels import get_kernel
from nxcc.ir.kernels.erf import erf, erf_float32
from tests.ir.kernels.fake_ctx import run1

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float16, BF16, np.float32, np.float64]
RNG = np.random.default_rng(0)


def _sample(dtype, lo=-3.0, hi=3.0, n=64) -> np.ndarray:
    return RNG.uniform(lo, hi, size=(4, n // 4)).astype(dtype)


FLOAT_REFS = {
    "exp": (np.exp, -3, 3),
    "expm1": (np.expm1, -1, 1),
    "log": (np.log, 0.1, 5),
    "log1p": (np.log1p, -0.5, 5),
    "sqrt": (np.sqrt, 0, 9),
    "rsqrt": (lambda x: 1 / np.sqrt(x), 0.1, 9),
    "cbrt": (np.cbrt, -8, 8),
    "tanh": (np.tanh, -4, 4),
    "logistic": (lambda x: 1 / (1 + np.exp(-x)), -8, 8),
    "sin": (np.sin, -4, 4),
    "cos": (np.cos, -4, 4),
    "tan": (np.tan, -1, 1),
    "erf": (np.vectorize(math.erf), -4, 4),
    "floor": (np.floor, -4, 4),
    "ceil": (np.ceil, -4, 4),
    "abs": (np.abs, -4, 4),
    "negate": (np.negative, -4, 4),
}


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("opcode", sorted(FLOAT_REFS))
def test_float_unary(opcode: str, dtype) -> None:
    ref, lo, hi = FLOAT_REFS[opcode]
    x = _sample(dtype, lo, hi)
    got = run1(opcode, [x])
    assert got.dtype == np.dtype(dtype)
    want = ref(x.astype(np.float64)).astype(dtype)  # one rounding of the exact value
    tol = {np.dtype(np.float64): 1e-13, np.dtype(np.float32): 2e-6}.get(np.dtype(dtype), 1e-2)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def test_float_unary_special_values() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    assert np.array_equal(run1("exp", [x]), np.exp(x), equal_nan=True)
    got = run1("logistic", [np.array([-1000.0, 1000.0, 0.0], np.float32)])
    np.testing.assert_array_equal(got, [0.0, 1.0, 0.5])
    got = run1("erf", [np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0])])
    np.testing.assert_array_equal(got, [np.nan, 1.0, -1.0, 0.0, -0.0, 1.0])
    assert np.signbit(got[4])


def test_sign() -> None:
    x = np.array([-2.5, -0.0, 0.0, 3.0, np.nan, -np.inf], np.float32)
    got = run1("sign", [x])
    np.testing.assert_array_equal(got, [-1, -0.0, 0, 1, np.nan, -1])
    assert np.signbit(got[1]) and not np.signbit(got[2])
    np.testing.assert_array_equal(run1("sign", [np.array([-7, 0, 9], np.int8)]), [-1, 0, 1])
    np.testing.assert_array_equal(run1("sign", [np.array([0, 9], np.uint16)]), [0, 1])


def test_rounding() -> None:
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999999999999994, -0.2, 2.6])
    np.testing.assert_array_equal(run1("round_even", [x]), [-2, -2, -0, 0, 2, 2, 0, -0, 3])
    got = run1("round_afz", [x])
    np.testing.assert_array_equal(got, [-3, -2, -1, 1, 2, 3, 0, -0, 3])
    assert np.signbit(got[7])
    got = run1("round_afz", [np.array([2.5, -0.5, np.inf, np.nan], BF16)])
    np.testing.assert_array_equal(got.astype(np.float32), [3, -1, np.inf, np.nan])


def test_integer_unary() -> None:
    x = np.array([-128, -1, 0, 1, 127], np.int8)
    np.testing.assert_array_equal(run1("abs", [x]), [-128, 1, 0, 1, 127])  # wraps
    np.testing.assert_array_equal(run1("negate", [x]), [-128, 1, 0, -1, -127])
    np.testing.assert_array_equal(run1("not", [x]), ~x)
    u = np.array([0, 1, 255], np.uint8)
    np.testing.assert_array_equal(run1("negate", [u]), [0, 255, 1])
    np.testing.assert_array_equal(run1("not", [np.array([True, False])]), [False, True])


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8,
                                   np.uint16, np.uint32, np.uint64])
def test_popcnt_clz(dtype) -> None:
    info = np.iinfo(dtype)
    bits = np.dtype(dtype).itemsize * 8
    values = [0, 1, 2, 3, info.max, info.min, info.max // 3, 5, 1 << (bits - 2)]
    x = np.array(values, dtype)
    mask = (1 << bits) - 1
    want_pop = [bin(int(v) & mask).count("1") for v in values]
    want_clz = [bits - (int(v) & mask).bit_length() for v in values]
    np.testing.assert_array_equal(run1("popcnt", [x]), want_pop)
    np.testing.assert_array_equal(run1("clz", [x]), want_clz)


def test_erf_accuracy_float64() -> None:
    x = np.concatenate([np.linspace(-7, 7, 9000), RNG.normal(0, 2, 1000)])
    want = np.array([math.erf(v) for v in x])
    got = erf(x)
    assert np.max(np.abs(got - want)) < 1e-6
    assert np.max(np.abs(got - want)) < 1e-14
    nonzero = want != 0
    assert np.max(np.abs(got - want)[nonzero] / np.abs(want[nonzero])) < 1e-13
    small = np.array([1e-300, 1e-10, -1e-5])
    np.testing.assert_allclose(erf(small), [math.erf(v) for v in small], rtol=1e-15)


def test_erf_kernel_float32() -> None:
    x = np.linspace(-5, 5, 10_001).astype(np.float32)
    got = run1("erf", [x])
    want = np.array([math.erf(float(v)) for v in x])
    assert got.dtype == np.float32
    assert np.max(np.abs(got - want)) < 1e-7


def test_bf16_rounds_once() -> None:
    x = np.array([0.1, 1.7, -3.3], BF16)
    got = run1("exp", [x])
    want = np.exp(x.astype(np.float32)).astype(BF16)
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("opcode,ref", [("sin", np.sin), ("log1p", np.log1p),
                                        ("cbrt", np.cbrt), ("expm1", np.expm1)])
def test_float32_transcendentals_are_correctly_rounded(opcode: str, ref) -> None:
    x = RNG.uniform(0, 10, 10_000).astype(np.float32)
    got = run1(opcode, [x])
    np.testing.assert_array_equal(got, ref(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("opcode,ref,bound", [("exp", np.exp, 2.55), ("tanh", np.tanh, 1.38),
                                              ("log", np.log, 3.84)])
def test_float32_exp_tanh_log_run_at_float32_cost_within_their_bounds(opcode: str, ref,
                                                                     bound: float) -> None:
    """numpy's float32 loops: within the ulp bounds unary.py documents (measured over every
    finite float32) on a sweep of every 4099th float32 of either sign, and the same bits
    whatever the layout (short, offset, strided, reversed, transposed), as the fused and
    softmax kernels need."""
    bits = np.arange(0, 0x7F800000, 4099, dtype=np.int64)
    x = np.concatenate([bits, bits + 0x80000000]).astype(np.uint32).view(np.float32)
    with np.errstate(all="ignore"):
        got = run1(opcode, [x])
        exact = ref(x.astype(np.float64))
        rounded = exact.astype(np.float32)
    assert got.dtype == np.float32
    finite = np.isfinite(exact) & (np.abs(exact) < float(np.finfo(np.float32).max))
    assert np.max(_ulp_error(got[finite], exact[finite])) <= bound
    assert np.array_equal(got[~finite], rounded[~finite], equal_nan=True)  # nan, inf, 0
    assert np.mean(got[finite] != rounded[finite]) > 0  # not the float64 path
    y = (RNG.standard_normal(4096) * 20).astype(np.float32)
    with np.errstate(all="ignore"):
        whole = run1(opcode, [y])
        for part in (y[3:20], y[1:2], y[::3], y[::-1], y.reshape(64, 64).T):
            np.testing.assert_array_equal(run1(opcode, [part]), ref(part))
            np.testing.assert_array_equal(run1(opcode, [np.ascontiguousarray(part)]),
                                          run1(opcode, [part]))
        np.testing.assert_array_equal(whole, ref(y))


def _ulp_error(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """|got - exact| in ulps of the float32 result (exact given in float64)."""
    ulp = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)
    return np.abs(got.astype(np.float64) - exact) / ulp


def test_erf_float32_error_bound_on_a_dense_sweep() -> None:
    # every 97th float32 from 2^-30 to 4.5 (about 9.6 million values), and their negatives
    lo, hi = np.array([2.0**-30, 4.5], np.float32).view(np.uint32)
    x = np.arange(lo, hi, 97, dtype=np.uint32).view(np.float32)
    x = np.concatenate([x, -x])
    got = run1("erf", [x])
    assert got.dtype == np.float32
    error = _ulp_error(got, erf(x.astype(np.float64)))
    assert np.max(error) <= 0.80  # the bound erf_float32 documents (float32 arithmetic)
    assert np.max(error[np.abs(x) >= 0.1]) <= 0.52


def test_erf_float32_is_the_same_for_small_and_large_arrays() -> None:
    """Small arrays gather whole table rows, large ones gather by blocks: the same bits."""
    x = (RNG.standard_normal(40_000) * 2).astype(np.float32)
    whole = erf_float32(x)
    pieces = np.concatenate([erf_float32(x[i:i + 1000]) for i in range(0, x.size, 1000)])
    np.testing.assert_array_equal(whole, pieces)


def test_erf_float32_special_values() -> None:
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 30.0, -4.0, 1e-30, -1e-40, 3.9],
                 np.float32)
    got = erf_float32(x)
    want = np.array([math.erf(float(v)) if np.isfinite(v) else np.sign(v) for v in x])
    # infinities, zeros and saturated values exactly; tiny and near-one ones within the bound
    np.testing.assert_array_equal(got[1:7], want[1:7].astype(np.float32))
    assert np.max(_ulp_error(got[7:], want[7:])) <= 0.80
    assert got[9] < 1.0  # erf(3.9) is still below one in float32
    assert np.isnan(got[0]) and np.signbit(got[4]) and not np.signbit(got[3])


@pytest.mark.parametrize("dtype", [np.float16, BF16], ids=["float16", "bfloat16"])
def test_erf_low_precision_goes_through_float32(dtype) -> None:
    x = np.linspace(-4, 4, 2001).astype(dtype)
    want = erf(x.astype(np.float64)).astype(np.float32).astype(dtype)
    got = run1("erf", [x])
    assert got.dtype == np.dtype(dtype)
    assert np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))) <= \
        float(np.max(np.spacing(np.abs(want).astype(np.float32)))) * 2 ** 16


@pytest.mark.parametrize("opcode,ref,lo,hi", [
    ("logistic", lambda x: 1 / (1 + np.exp(-x)), -90, 30),
    ("rsqrt", lambda x: 1 / np.sqrt(x), 1e-3, 1e3),
])
def test_float32_logistic_rsqrt_are_correctly_rounded(opcode: str, ref, lo: float,
                                                     hi: float) -> None:
    x = RNG.uniform(lo, hi, 20_000).astype(np.float32)
    got = run1(opcode, [x])
    np.testing.assert_array_equal(got, ref(x.astype(np.float64)).astype(np.float32))


@pytest.mark.parametrize("opcode", ["logistic", "rsqrt", "erf", "exp", "tanh"])
def test_float32_transcendentals_of_a_scalar(opcode: str) -> None:
    """0-d operands (numpy gives scalars, not arrays, for 0-d results of ufuncs); exp and
    tanh by numpy's float32 loop."""
    x = np.array(0.25, np.float32)
    out = np.empty((), np.float32)
    get_kernel(opcode)([x], [out], {}, None)  # type: ignore[arg-type]
    want = {"logistic": 1 / (1 + np.exp(-0.25)), "rsqrt": 2.0, "erf": 0.2763263901682369,
            "exp": np.exp(np.float32(0.25)), "tanh": np.tanh(np.float32(0.25))}[opcode]
    assert out == np.float32(want)
