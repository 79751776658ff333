"""dot_general against numpy einsum, including exact integer accumulation."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from nxcc.ir import DType
from tests.ir.kernels.fake_ctx import run1

RNG = np.random.default_rng(3)


def test_matmul() -> None:
    a = RNG.normal(size=(3, 4)).astype(np.float32)
    b = RNG.normal(size=(4, 5)).astype(np.float32)
    got = run1("dot_general", [a, b], {"lhs_contracting_dims": (1,),
                                       "rhs_contracting_dims": (0,)})
    np.testing.assert_allclose(got, a @ b, rtol=1e-5)


def test_batched_multi_contracting_and_transposed() -> None:
    a = RNG.normal(size=(5, 2, 3, 4)).astype(np.float64)  # k1, batch, m, k2
    b = RNG.normal(size=(4, 6, 2, 5)).astype(np.float64)  # k2, n, batch, k1
    got = run1("dot_general", [a, b], {
        "lhs_batch_dims": (1,), "rhs_batch_dims": (2,),
        "lhs_contracting_dims": (0, 3), "rhs_contracting_dims": (3, 0)})
    want = np.einsum("xbmy,ynbx->bmn", a, b)
    assert got.shape == (2, 3, 6)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_outer_product_no_contraction() -> None:
    a = np.arange(3, dtype=np.int32)
    b = np.arange(4, dtype=np.int32)
    got = run1("dot_general", [a, b], {"lhs_contracting_dims": (), "rhs_contracting_dims": ()})
    np.testing.assert_array_equal(got, np.outer(a, b))


def test_integer_exact_and_result_dtype() -> None:
    a = RNG.integers(-128, 128, (4, 300)).astype(np.int8)
    b = RNG.integers(-128, 128, (300, 3)).astype(np.int8)
    got = run1("dot_general", [a, b], {"lhs_contracting_dims": (1,),
                                       "rhs_contracting_dims": (0,),
                                       "result_dtype": DType.S32})
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, a.astype(np.int64) @ b.astype(np.int64))
    big = np.full((2, 3), 2**40 + 1, np.int64)
    got = run1("dot_general", [big, big.T.copy()], {"lhs_contracting_dims": (1,),
                                                    "rhs_contracting_dims": (0,)})
    want = [[3 * (2**40 + 1) ** 2 % 2**64] * 2] * 2
    np.testing.assert_array_equal(got.view(np.uint64), np.array(want, np.uint64))
    wrap = run1("dot_general", [a, b], {"lhs_contracting_dims": (1,),
                                        "rhs_contracting_dims": (0,)})
    np.testing.assert_array_equal(wrap, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int8))


def test_bf16_with_f32_result() -> None:
    a = RNG.normal(size=(2, 8)).astype(ml_dtypes.bfloat16)
    b = RNG.normal(size=(8, 3)).astype(ml_dtypes.bfloat16)
    got = run1("dot_general", [a, b], {"lhs_contracting_dims": (1,),
                                       "rhs_contracting_dims": (0,),
                                       "result_dtype": DType.F32})
    assert got.dtype == np.float32
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    low = run1("dot_general", [a, b], {"lhs_contracting_dims": (1,),
                                       "rhs_contracting_dims": (0,)})
    assert low.dtype == ml_dtypes.bfloat16
    np.testing.assert_allclose(low.astype(np.float64), want, rtol=2e-2, atol=2e-2)
