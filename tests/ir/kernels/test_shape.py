"""Data-movement kernels against numpy and a naive pad reference."""

from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

from nxcc.ir import DType
from nxcc.ir.attributes import Dense
from tests.ir.kernels.fake_ctx import run1

RNG = np.random.default_rng(2)


def test_broadcast_in_dim() -> None:
    x = np.arange(3, dtype=np.float32)
    got = run1("broadcast_in_dim", [x], {"shape": (2, 3, 4), "broadcast_dimensions": (1,)})
    np.testing.assert_array_equal(got, np.broadcast_to(x[None, :, None], (2, 3, 4)))
    y = np.arange(2, dtype=np.int32).reshape(2, 1)
    got = run1("broadcast_in_dim", [y], {"shape": (2, 5, 3), "broadcast_dimensions": (0, 2)})
    np.testing.assert_array_equal(got, np.broadcast_to(y[:, None, :], (2, 5, 3)))
    s = run1("broadcast_in_dim", [np.array(7, np.int8)], {"shape": (2, 2),
                                                          "broadcast_dimensions": ()})
    np.testing.assert_array_equal(s, np.full((2, 2), 7))


def test_reshape_transpose_slice_reverse_copy() -> None:
    x = RNG.normal(size=(2, 3, 4)).astype(np.float32)
    np.testing.assert_array_equal(run1("reshape", [x], {"shape": (6, 4)}), x.reshape(6, 4))
    np.testing.assert_array_equal(run1("transpose", [x], {"permutation": (2, 0, 1)}),
                                  x.transpose(2, 0, 1))
    got = run1("slice", [x], {"start_indices": (0, 1, 1), "limit_indices": (2, 3, 4),
                              "strides": (1, 1, 2)})
    np.testing.assert_array_equal(got, x[0:2, 1:3, 1:4:2])
    np.testing.assert_array_equal(run1("reverse", [x], {"dimensions": (0, 2)}),
                                  x[::-1, :, ::-1])
    np.testing.assert_array_equal(run1("copy", [x]), x)


def _naive_pad(x: np.ndarray, value, low, high, interior) -> np.ndarray:
    shape = [lo + hi + n + max(n - 1, 0) * it
             for n, lo, hi, it in zip(x.shape, low, high, interior, strict=True)]
    out = np.full(shape, value, x.dtype)
    for o in itertools.product(*(range(s) for s in shape)):
        src = []
        for d, od in enumerate(o):
            rel = od - low[d]
            step = interior[d] + 1
            if rel < 0 or rel % step or rel // step >= x.shape[d]:
                break
            src.append(rel // step)
        else:
            out[o] = x[tuple(src)]
    return out


@pytest.mark.parametrize("low,high,interior", [
    ((1, 2), (0, 3), (0, 0)),
    ((0, 0), (0, 0), (1, 2)),
    ((-1, 2), (1, -2), (1, 1)),
    ((-3, -4), (-2, 1), (2, 0)),
    ((2, -9), (1, -1), (0, 2)),
    ((0, -7), (0, 0), (0, 2)),
])
def test_pad_negative_and_interior(low, high, interior) -> None:
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    got = run1("pad", [x, np.array(-7, np.int32)], {"low": low, "high": high,
                                                   "interior": interior})
    np.testing.assert_array_equal(got, _naive_pad(x, -7, low, high, interior))


def test_pad_bf16() -> None:
    x = np.array([1.5, 2.5], ml_dtypes.bfloat16)
    got = run1("pad", [x, np.array(0, ml_dtypes.bfloat16)], {"low": (1,), "high": (1,),
                                                             "interior": (1,)})
    np.testing.assert_array_equal(got.astype(np.float32), [0, 1.5, 0, 2.5, 0])


def test_concatenate() -> None:
    a = np.ones((2, 1), np.float32)
    b = np.zeros((2, 3), np.float32)
    c = np.full((2, 2), 5, np.float32)
    got = run1("concatenate", [a, b, c], {"dimension": 1})
    np.testing.assert_array_equal(got, np.concatenate([a, b, c], 1))


@pytest.mark.parametrize("dtype", [DType.S32, DType.F32, DType.BF16, DType.U8])
def test_iota(dtype: DType) -> None:
    got = run1("iota", [], {"dtype": dtype, "shape": (3, 4), "dimension": 1})
    assert got.dtype == dtype.numpy
    np.testing.assert_array_equal(got.astype(np.float64), np.tile(np.arange(4), (3, 1)))


def test_constant() -> None:
    value = np.arange(6, dtype=np.int64).reshape(2, 3)
    np.testing.assert_array_equal(run1("constant", [], {"value": Dense.of(value)}), value)
    splat = Dense.splat(Dense.of(np.zeros((2, 2), np.float32)).type, 2.5)
    np.testing.assert_array_equal(run1("constant", [], {"value": splat}), np.full((2, 2), 2.5))
