"""sort: stable multi-operand sorts by LT/GT, lexicographic and arbitrary comparators."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import Builder, DType, Module, Value
from nxcc.ir.computations import compare_computation
from tests.ir.kernels.fake_ctx import FakeCtx, run_op, scalar_function

RNG = np.random.default_rng(6)


def _stable_ref(keys: list, descending: bool) -> list[int]:
    """The stable sorting permutation (Python's sort is stable)."""
    return sorted(range(len(keys)), key=lambda i: -keys[i] if descending else keys[i])


@pytest.mark.parametrize("direction", ["LT", "GT"])
def test_multi_operand_stable(direction: str) -> None:
    module = Module("m")
    comp = compare_computation(module, direction, [DType.F32, DType.S32])
    keys = RNG.integers(0, 5, (3, 20)).astype(np.float32)
    payload = np.broadcast_to(np.arange(20, dtype=np.int32), keys.shape).copy()
    ctx = FakeCtx(module)
    k, p = run_op("sort", [keys, payload], {"dimension": 1, "is_stable": True,
                                            "comparator": comp}, module, ctx)
    for row in range(3):
        order = _stable_ref(list(keys[row]), descending=direction == "GT")
        np.testing.assert_array_equal(p[row], order)
        np.testing.assert_array_equal(k[row], keys[row][order])
    assert len(ctx.calls) <= 4  # a verified fast path, no network


def test_sort_dimension_zero_ints() -> None:
    module = Module("m")
    comp = compare_computation(module, "LT", [DType.S64])
    x = RNG.integers(-10**12, 10**12, (9, 4)).astype(np.int64)
    (got,) = run_op("sort", [x], {"dimension": 0, "comparator": comp}, module)
    np.testing.assert_array_equal(got, np.sort(x, axis=0))


def _lexicographic(module: Module) -> str:
    """JAX-style two-key comparator: a0 < b0 or (a0 == b0 and a1 < b1)."""
    def body(b: Builder, p: list[Value]) -> list[Value]:
        a0, b0, a1, b1 = p
        lt0 = b.compare(a0, b0, direction="LT")
        eq0 = b.compare(a0, b0, direction="EQ")
        lt1 = b.compare(a1, b1, direction="LT")
        return [b.op("or", [lt0, b.op("and", [eq0, lt1])])]
    return scalar_function(module, "lex", [DType.S32] * 4, body)


def test_lexicographic_comparator() -> None:
    module = Module("m")
    comp = _lexicographic(module)
    a = RNG.integers(0, 3, 30).astype(np.int32)
    b = RNG.integers(0, 5, 30).astype(np.int32)
    ga, gb = run_op("sort", [a, b], {"dimension": 0, "comparator": comp}, module)
    order = sorted(range(30), key=lambda i: (a[i], b[i]))
    np.testing.assert_array_equal(ga, a[order])
    np.testing.assert_array_equal(gb, b[order])


def _by_abs(module: Module) -> str:
    def body(b: Builder, p: list[Value]) -> list[Value]:
        return [b.compare(b.abs(p[0]), b.abs(p[1]), direction="LT")]
    return scalar_function(module, "by_abs", [DType.F64, DType.F64, DType.S32, DType.S32], body)


@pytest.mark.parametrize("n", [2, 5, 16, 37])
def test_arbitrary_comparator_uses_network_and_is_stable(n: int) -> None:
    module = Module("m")
    comp = _by_abs(module)
    x = RNG.integers(-4, 5, (2, n)).astype(np.float64)
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), x.shape).copy()
    gx, gi = run_op("sort", [x, idx], {"dimension": 1, "comparator": comp}, module)
    for row in range(2):
        order = sorted(range(n), key=lambda i: abs(x[row, i]))
        np.testing.assert_array_equal(gi[row], order)
        np.testing.assert_array_equal(gx[row], x[row, order])


def test_trivial_lengths() -> None:
    module = Module("m")
    comp = compare_computation(module, "LT", [DType.F32])
    for shape in ((3, 1), (0, 4)):
        x = np.ones(shape, np.float32)
        (got,) = run_op("sort", [x], {"dimension": 1, "comparator": comp}, module)
        np.testing.assert_array_equal(got, x)


def _total_order(module: Module) -> str:
    """JAX-style float total order: compare the sign-magnitude-flipped bit patterns."""
    def key(b: Builder, x: Value) -> Value:
        bits = b.bitcast_convert(x, dtype=DType.S32)
        flipped = b.xor(bits, b.constant(np.int32(0x7FFFFFFF)))
        return b.select(b.compare(bits, b.constant(np.int32(0)), direction="LT"), flipped, bits)

    def body(b: Builder, p: list[Value]) -> list[Value]:
        return [b.compare(key(b, p[0]), key(b, p[1]), direction="LT")]
    return scalar_function(module, "total_lt", [DType.F32, DType.F32], body)


def test_float_total_order_comparator() -> None:
    module = Module("m")
    comp = _total_order(module)
    x = np.array([0.0, -0.0, np.nan, 1.5, -np.inf, -0.0, 0.0, -2.0, np.inf, 1.5], np.float32)
    (got,) = run_op("sort", [x], {"dimension": 0, "comparator": comp}, module)
    bits = x.view(np.int32).astype(np.int64)
    keys = np.where(bits < 0, bits ^ 0x7FFFFFFF, bits)
    order = sorted(range(x.size), key=lambda i: keys[i])
    np.testing.assert_array_equal(got.view(np.int32), x[order].view(np.int32))
    y = RNG.normal(size=50).astype(np.float32)
    (got,) = run_op("sort", [y], {"dimension": 0, "comparator": comp}, module)
    np.testing.assert_array_equal(got, np.sort(y))
