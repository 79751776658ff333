"""Binary elementwise kernels: float refs, C-like integer division/remainder, power, shifts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.ir.kernels.fake_ctx import run1

BF16 = np.dtype(ml_dtypes.bfloat16)
RNG = np.random.default_rng(1)
INTS = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
SIGNED = [np.int8, np.int16, np.int32, np.int64]


def _ints(dtype, n=200) -> np.ndarray:
    info = np.iinfo(dtype)
    edge = np.array([info.min, info.max, 0, 1, 2, 7], dtype)
    small = RNG.integers(max(info.min, -20), min(info.max, 20), n, dtype=dtype)
    big = RNG.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return np.concatenate([edge, small, big])


def _wrap(value: int, dtype) -> int:
    bits = np.dtype(dtype).itemsize * 8
    value &= (1 << bits) - 1
    if np.dtype(dtype).kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def _c_div(a: int, b: int, dtype) -> int:
    if b == 0:
        return _wrap(-1, dtype)
    q = abs(a) // abs(b)
    return _wrap(q if (a < 0) == (b < 0) else -q, dtype)


def _c_rem(a: int, b: int, dtype) -> int:
    if b == 0:
        return a
    q = abs(a) // abs(b)
    return _wrap(a - b * (q if (a < 0) == (b < 0) else -q), dtype)


FLOAT_REFS = {
    "add": np.add, "subtract": np.subtract, "multiply": np.multiply, "divide": np.divide,
    "remainder": np.fmod, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
    "atan2": np.arctan2,
}


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.float32, np.float64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("opcode", sorted(FLOAT_REFS))
def test_float_binary(opcode: str, dtype) -> None:
    a = RNG.uniform(0.5, 3, (3, 8)).astype(dtype)
    b = RNG.uniform(-3, 3, (3, 8)).astype(dtype)
    got = run1(opcode, [a, b])
    assert got.dtype == np.dtype(dtype)
    want = FLOAT_REFS[opcode](a.astype(np.float64), b.astype(np.float64)).astype(dtype)
    tol = {np.dtype(np.float64): 1e-13, np.dtype(np.float32): 2e-6}.get(np.dtype(dtype), 1e-2)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol,
                               atol=tol)


def test_float_remainder_sign_of_dividend_and_nan() -> None:
    a = np.array([-7.5, 7.5, -7.5, 7.5, 1.0, np.nan], np.float32)
    b = np.array([2.0, -2.0, -2.0, 2.0, 0.0, 1.0], np.float32)
    got = run1("remainder", [a, b])
    np.testing.assert_array_equal(got, [-1.5, 1.5, -1.5, 1.5, np.nan, np.nan])
    got = run1("maximum", [np.array([np.nan, 1.0]), np.array([0.0, np.nan])])
    assert np.isnan(got).all()


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
def test_integer_divide_remainder(dtype) -> None:
    a = _ints(dtype)
    b = np.roll(_ints(dtype), 3)
    b[:5] = [0, 0, 1, 2, 3]
    if np.dtype(dtype).kind == "i":
        a[5], b[5] = np.iinfo(dtype).min, -1
    got_q = run1("divide", [a, b])
    got_r = run1("remainder", [a, b])
    want_q = [_c_div(int(x), int(y), dtype) for x, y in zip(a, b, strict=True)]
    want_r = [_c_rem(int(x), int(y), dtype) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got_q, np.array(want_q, dtype))
    np.testing.assert_array_equal(got_r, np.array(want_r, dtype))


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("opcode,ref", [("add", lambda x, y: x + y),
                                        ("subtract", lambda x, y: x - y),
                                        ("multiply", lambda x, y: x * y),
                                        ("maximum", max), ("minimum", min),
                                        ("and", lambda x, y: x & y), ("or", lambda x, y: x | y),
                                        ("xor", lambda x, y: x ^ y)])
def test_integer_wrapping_ops(opcode: str, ref, dtype) -> None:
    a, b = _ints(dtype, 50), np.roll(_ints(dtype, 50), 7)
    got = run1(opcode, [a, b])
    want = [_wrap(ref(int(x), int(y)), dtype) for x, y in zip(a, b, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, dtype))


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
def test_integer_power(dtype) -> None:
    signed = np.dtype(dtype).kind == "i"
    base = RNG.integers(-5 if signed else 0, 6, 300).astype(dtype)
    exp = RNG.integers(-3 if signed else 0, 40, 300).astype(dtype)
    got = run1("power", [base, exp])

    def ref(x: int, y: int) -> int:
        if y < 0:
            return 1 if x == 1 else (-1 if y % 2 else 1) if x == -1 else 0
        return _wrap(x**y, dtype)

    want = [ref(int(x), int(y)) for x, y in zip(base, exp, strict=True)]
    np.testing.assert_array_equal(got, np.array(want, dtype))


@pytest.mark.parametrize("dtype", INTS, ids=lambda d: np.dtype(d).name)
def test_shifts(dtype) -> None:
    bits = np.dtype(dtype).itemsize * 8
    a = _ints(dtype, 30)
    counts = np.resize(np.array([0, 1, 3, bits - 1, bits, bits + 5, 255]), a.shape)
    if np.dtype(dtype).kind == "i":
        counts[-1] = -1
    n = counts.astype(dtype)
    mask = (1 << bits) - 1
    left, logical, arith = [], [], []
    for x, c in zip(a, n, strict=True):
        x, c = int(x), int(c) & mask  # counts are read as unsigned
        ok = c < bits
        left.append(_wrap(x << c, dtype) if ok else 0)
        logical.append(_wrap((x & mask) >> c, dtype) if ok else 0)
        sx = _wrap(x, np.dtype(f"i{bits // 8}"))
        arith.append(_wrap(sx >> min(c, bits - 1), dtype))
    np.testing.assert_array_equal(run1("shift_left", [a, n]), np.array(left, dtype))
    np.testing.assert_array_equal(run1("shift_right_logical", [a, n]),
                                  np.array(logical, dtype))
    np.testing.assert_array_equal(run1("shift_right_arithmetic", [a, n]),
                                  np.array(arith, dtype))


def test_pred_binary() -> None:
    a = np.array([True, True, False, False])
    b = np.array([True, False, True, False])
    np.testing.assert_array_equal(run1("add", [a, b]), a | b)
    np.testing.assert_array_equal(run1("multiply", [a, b]), a & b)
    np.testing.assert_array_equal(run1("maximum", [a, b]), a | b)
    np.testing.assert_array_equal(run1("minimum", [a, b]), a & b)
    np.testing.assert_array_equal(run1("xor", [a, b]), a ^ b)


def test_float_power_and_division_specials() -> None:
    a = np.array([1.0, -1.0, 0.0, 2.0], np.float32)
    b = np.array([0.0, 0.0, 0.0, -1.0], np.float32)
    got = run1("divide", [a, b])
    np.testing.assert_array_equal(got, [np.inf, -np.inf, np.nan, -2.0])
    np.testing.assert_array_equal(run1("power", [np.array([0.0, 2.0]), np.array([0.0, 0.5])]),
                                  [1.0, np.sqrt(2.0)])
