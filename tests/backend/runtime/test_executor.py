"""The executor's bound steps: same results as numpy, inputs followed from run to run, fast
paths taken for the cheap ops, failures named, and the per-instruction overhead."""

from __future__ import annotations

import functools
import sys
import time

import numpy as np
import pytest

from nxcc.backend.program.lower import WeightTable, lower_module
from nxcc.backend.runtime.executor import ExecutionError, ProgramExecutor
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from tests.paths import REPO

sys.path.insert(0, str(REPO / "bench"))
from executor_overhead import chain_module  # noqa: E402

RNG = np.random.default_rng(0)
W = RNG.standard_normal((5, 3)).astype(np.float32)  # used transposed: packed at load


def executor(module: Module) -> ProgramExecutor:
    table = WeightTable()
    program = lower_module(module, table)
    return ProgramExecutor(program, table.arrays)


def mixed_module() -> Module:
    """y = relu(broadcast(b) + reshape(transpose(x)) @ W^T) and z = -(x * x), on f32."""
    module = Module("mixed")
    x = Value(TensorType(DType.F32, (3, 4)), "x")
    fn = Function("main", [x])
    module.add_function(fn)
    b = Builder(module, fn)
    xt = b.op("transpose", [x], {"permutation": (1, 0)})                # [4, 3]
    flat = b.reshape(xt, (2, 6))
    back = b.reshape(flat, (4, 3))
    mm = b.dot_general(back, b.constant(W), lhs_contracting_dims=(1,),
                       rhs_contracting_dims=(1,))                       # [4, 5]
    bias = b.broadcast_to(b.constant(np.arange(5, dtype=np.float32)), (4, 5))
    y = b.op("maximum", [b.op("add", [mm, bias]), b.splat(0.0, mm.type)])
    z = b.op("negate", [b.op("multiply", [x, x])])
    fn.results = [y, z]
    fn.result_names = ["y", "z"]
    return module


def reference(x: np.ndarray) -> list[np.ndarray]:
    y = np.maximum(x.T @ W.T + np.arange(5, dtype=np.float32), 0)
    return [y, -(x * x)]


def test_results_match_numpy_and_follow_new_inputs() -> None:
    ex = executor(mixed_module())
    for _ in range(3):
        x = RNG.standard_normal((3, 4)).astype(np.float32)
        got = ex.run([x])
        for g, want in zip(got, reference(x), strict=True):
            np.testing.assert_allclose(g, want, rtol=1e-6, atol=1e-6)
    first = ex.run([np.ones((3, 4), np.float32)])
    ex.run([np.zeros((3, 4), np.float32)])
    np.testing.assert_array_equal(first[1], -np.ones((3, 4), np.float32))  # a fresh copy


def test_results_as_views_are_read_only_and_follow_the_next_run() -> None:
    ex = executor(mixed_module())
    ones, zeros = np.ones((3, 4), np.float32), np.zeros((3, 4), np.float32)
    reported: dict[int, np.ndarray] = {}
    first = ex.run([ones], on_result=lambda k, a: reported.setdefault(k, a), copy=False)
    for got, want in zip(first, reference(ones), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
        assert not got.flags.writeable
    assert all(reported[k] is first[k] for k in (0, 1))  # the same views, not copies
    ex.run([zeros], copy=False)
    np.testing.assert_array_equal(first[1], -zeros)  # the executor's buffer, overwritten


def test_bound_buffers_are_read_and_written_in_place() -> None:
    module = mixed_module()
    fn = module.functions["main"]
    b = Builder(module, fn)
    fn.results = [*fn.results, b.reshape(fn.results[1], (4, 3))]  # z, and a view of it
    fn.result_names = ["y", "z", "zr"]
    ex = executor(module)
    x = np.ones((3, 4), np.float32)
    y, z, zr = np.empty((4, 5), np.float32), np.empty((3, 4), np.float32), np.empty(
        (4, 3), np.float32)
    assert ex.bind_buffers({0: x}, {0: y, 1: z, 2: zr}) == [0]  # z is viewed, zr a view
    for value in (1.0, 2.0):
        x[...] = value  # read where it is, at each run
        got = ex.run([x], copy=False)
        want = reference(x)
        np.testing.assert_allclose(y, want[0], rtol=1e-6, atol=1e-6)  # written in place
        assert got[0].base is y and not got[0].flags.writeable
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[1].reshape(4, 3))
    other = np.zeros((3, 4), np.float32)
    ex.run([other])  # another array for a bound parameter is copied into the bound one
    np.testing.assert_array_equal(x, other)


@pytest.mark.parametrize("bad", [np.ones((4, 3), np.float32), np.ones((3, 4), np.float64),
                                 np.ones((4, 3), np.float32).T])
def test_a_buffer_of_another_shape_dtype_or_layout_is_refused(bad: np.ndarray) -> None:
    ex = executor(mixed_module())
    with pytest.raises(ValueError, match=r"parameter 0 must be a C-contiguous float32\[3, 4\]"):
        ex.bind_buffers({0: bad})
    np.testing.assert_allclose(ex.run([np.ones((3, 4), np.float32)])[1], -1.0)


def test_cheap_ops_are_bound_to_numpy_calls_not_kernels() -> None:
    ex = executor(mixed_module())
    ex.run([np.ones((3, 4), np.float32)])
    steps = ex.functions["main"].bound(ex).steps
    called = {s.func for s in steps if isinstance(s, functools.partial)}
    assert called == {np.copyto, np.dot, np.add, np.maximum, np.multiply, np.negative}


@pytest.mark.parametrize(("lhs_shape", "rhs_shape", "dims", "dtype"), [
    ((4, 16), (32, 16), ((1,), (1,), (), ()), np.float32),   # x W^T: rhs read transposed
    ((16, 4), (16, 32), ((0,), (0,), (), ()), np.float32),   # x^T W: lhs read transposed
    ((1, 300), (300, 7), ((1,), (0,), (), ()), np.float64),  # a row times a matrix
    ((2, 5, 6), (2, 6, 3), ((2,), (1,), (0,), (0,)), np.float32),  # a batch: matmul
])
def test_bound_matrix_products_give_the_kernels_bits(lhs_shape, rhs_shape, dims,
                                                     dtype) -> None:
    """One product is bound as np.dot, a batch as np.matmul: both the dot_general kernel's
    bits (the kernel calls np.matmul), the lhs an argument the step must follow."""
    from nxcc.ir.kernels import get_kernel
    lc, rc, lb, rb = dims
    module = Module("dot")
    x = Value(TensorType(DType.from_numpy(np.dtype(dtype)), lhs_shape), "x")
    fn = Function("main", [x])
    module.add_function(fn)
    b = Builder(module, fn)
    w = RNG.standard_normal(rhs_shape).astype(dtype)
    y = b.dot_general(x, b.constant(w), lhs_contracting_dims=lc, rhs_contracting_dims=rc,
                      lhs_batch_dims=lb, rhs_batch_dims=rb)
    fn.results = [y]
    fn.result_names = ["y"]
    ex = executor(module)
    for _ in range(2):
        lhs = RNG.standard_normal(lhs_shape).astype(dtype)
        want = np.empty(y.type.shape, dtype)
        get_kernel("dot_general")([lhs, w], [want], y.owner.attrs, ex)
        np.testing.assert_array_equal(ex.run([lhs])[0], want)
    step = ex.functions["main"].bound(ex).steps[0]
    assert step.func is (np.matmul if lb else np.dot)


def test_a_failing_step_names_the_instruction() -> None:
    module = Module("bad")
    x = Value(TensorType(DType.S32, (2,)), "x")
    fn = Function("main", [x])
    module.add_function(fn)
    b = Builder(module, fn)
    y = b.op("add", [x, x])
    fn.results = [b.op("dynamic_slice", [y, b.constant(np.int32(0))], {"slice_sizes": (1,)})]
    ex = executor(module)
    ex.functions["main"].bound(ex).steps[1] = functools.partial(int, "boom")
    with pytest.raises(ExecutionError, match=r"instruction 1 \(dynamic_slice\) of @main: "
                                             r"ValueError"):
        ex.run([np.arange(2, dtype=np.int32)])


def test_chain_of_cheap_ops_costs_under_3_us_per_instruction() -> None:
    length = 2000
    ex = executor(chain_module(length))
    x = np.linspace(-1, 1, 8).astype(np.float32)
    got = ex.run([x])[0]
    w, want = np.linspace(0.5, 1.5, 8).astype(np.float32), x
    for i in range(length):
        want = [want + w, want * w, np.maximum(want, w), -want][i % 4]
    np.testing.assert_array_equal(got, want)
    best = min(_seconds(ex, x) for _ in range(20))
    assert best / length < 3e-6, f"{best / length * 1e6:.2f} us per instruction"


def _seconds(ex: ProgramExecutor, x: np.ndarray) -> float:
    start = time.perf_counter()
    ex.run([x])
    return time.perf_counter() - start
