"""compare, select, clamp, is_finite, convert and bitcast_convert."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nxcc.ir import DType
from tests.ir.kernels.fake_ctx import run1

BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.mark.parametrize("direction,ref", [("EQ", np.equal), ("NE", np.not_equal),
                                           ("LT", np.less), ("LE", np.less_equal),
                                           ("GT", np.greater), ("GE", np.greater_equal)])
@pytest.mark.parametrize("dtype", [np.float32, BF16, np.int8, np.uint32, np.bool_],
                         ids=lambda d: np.dtype(d).name)
def test_compare(direction: str, ref, dtype) -> None:
    if np.dtype(dtype) == np.bool_:
        a = np.array([True, True, False, False])
        b = np.array([True, False, True, False])
    else:
        a = np.array([1, 2, 3, 0, 5, 7], dtype)
        b = np.array([1, 3, 2, 0, 6, 7], dtype)
    got = run1("compare", [a, b], {"direction": direction})
    assert got.dtype == np.bool_
    np.testing.assert_array_equal(got, ref(a, b))


def test_compare_nan() -> None:
    a = np.array([np.nan, np.nan, 1.0])
    b = np.array([np.nan, 1.0, np.nan])
    assert not run1("compare", [a, b], {"direction": "EQ"}).any()
    assert run1("compare", [a, b], {"direction": "NE"}).all()


def test_select_full_and_scalar_pred() -> None:
    p = np.array([[True, False, True], [False, False, True]])
    t = np.arange(6, dtype=np.float32).reshape(2, 3)
    f = -t
    np.testing.assert_array_equal(run1("select", [p, t, f]), np.where(p, t, f))
    np.testing.assert_array_equal(run1("select", [np.array(True), t, f]), t)
    np.testing.assert_array_equal(run1("select", [np.array(False), t, f]), f)


def test_clamp() -> None:
    x = np.array([-5, -1, 0, 3, 9], np.int32)
    got = run1("clamp", [np.array(-1, np.int32), x, np.array(4, np.int32)])
    np.testing.assert_array_equal(got, [-1, -1, 0, 3, 4])
    lo = np.array([0, 0, 1, 1, 1], np.int32)
    hi = np.array([2, 2, 2, 2, 20], np.int32)
    np.testing.assert_array_equal(run1("clamp", [lo, x, hi]), np.clip(x, lo, hi))
    xf = np.array([np.nan, 0.5, 3.0], BF16)
    got = run1("clamp", [np.array(0, BF16), xf, np.array(1, BF16)])
    np.testing.assert_array_equal(got.astype(np.float32), [np.nan, 0.5, 1.0])


def test_is_finite() -> None:
    x = np.array([1.0, np.inf, -np.inf, np.nan, 0.0], np.float16)
    np.testing.assert_array_equal(run1("is_finite", [x]), [True, False, False, False, True])


def test_convert_float_to_int_truncates_and_saturates() -> None:
    x = np.array([1.9, -1.9, -0.5, 300.0, -300.0, np.nan, np.inf, -np.inf, 127.0], np.float32)
    got = run1("convert", [x], {"dtype": DType.S8})
    np.testing.assert_array_equal(got, [1, -1, 0, 127, -128, 0, 127, -128, 127])
    got = run1("convert", [x], {"dtype": DType.U8})
    np.testing.assert_array_equal(got, [1, 0, 0, 255, 0, 0, 255, 0, 127])
    big = np.array([9.3e18, -9.3e18, 2.0**62, 1.8e19, 2.0**64], np.float64)
    got = run1("convert", [big], {"dtype": DType.S64})
    np.testing.assert_array_equal(got, [2**63 - 1, -(2**63), 2**62, 2**63 - 1, 2**63 - 1])
    got = run1("convert", [big], {"dtype": DType.U64})
    np.testing.assert_array_equal(got, np.array([9300000000000000000, 0, 2**62,
                                                 18000000000000000000, 2**64 - 1], np.uint64))


def test_convert_to_pred_and_back() -> None:
    x = np.array([0.0, -0.0, 0.5, np.nan, -2.0], np.float32)
    np.testing.assert_array_equal(run1("convert", [x], {"dtype": DType.PRED}),
                                  [False, False, True, True, True])
    np.testing.assert_array_equal(run1("convert", [np.array([0, 3, -1], np.int16)],
                                       {"dtype": DType.PRED}), [False, True, True])
    got = run1("convert", [np.array([True, False])], {"dtype": DType.BF16})
    np.testing.assert_array_equal(got.astype(np.float32), [1.0, 0.0])


def test_convert_ints_wrap_and_floats_round() -> None:
    x = np.array([300, -1, 70000], np.int32)
    np.testing.assert_array_equal(run1("convert", [x], {"dtype": DType.U8}), [44, 255, 112])
    f = np.array([1.00390625, 1.01171875, 3.0e38], np.float32)
    got = run1("convert", [f], {"dtype": DType.BF16})
    np.testing.assert_array_equal(got, f.astype(BF16))
    assert got.astype(np.float32)[0] == 1.0 and got.astype(np.float32)[1] == 1.015625
    h = run1("convert", [np.array([70000.0, 1.0 / 3])], {"dtype": DType.F16})
    np.testing.assert_array_equal(h, np.array([np.inf, 1.0 / 3], np.float16))
    b = run1("convert", [np.array([1.5, -2.5], BF16)], {"dtype": DType.S32})
    np.testing.assert_array_equal(b, [1, -2])


def test_bitcast_same_size() -> None:
    x = np.array([1.0, -2.0], np.float32)
    np.testing.assert_array_equal(run1("bitcast_convert", [x], {"dtype": DType.U32}),
                                  x.view(np.uint32))
    b = np.array([1.0, 3.5], BF16)
    np.testing.assert_array_equal(run1("bitcast_convert", [b], {"dtype": DType.S16}),
                                  b.view(np.int16))


def test_bitcast_size_changing() -> None:
    x = np.array([[0x01020304, 0x0A0B0C0D]], np.uint32)
    got = run1("bitcast_convert", [x], {"dtype": DType.U8})
    assert got.shape == (1, 2, 4)
    np.testing.assert_array_equal(got[0, 0], [4, 3, 2, 1])
    back = run1("bitcast_convert", [got], {"dtype": DType.U32})
    np.testing.assert_array_equal(back, x)
    s = run1("bitcast_convert", [np.array(1.0, np.float64)], {"dtype": DType.F32})
    assert s.shape == (2,)
    np.testing.assert_array_equal(s, np.array([1.0]).view(np.float32))
