"""The fused_elementwise plan made once at load (`prepare_fused` with `constant` flags):
a constant one-value operand of maximum/minimum is read from a block-sized array, and a
non-constant one still follows its slot."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.ir import DType
from nxcc.ir.kernels import fused
from nxcc.ir.kernels.fused import prepare_fused
from tests.ir.kernels.fake_ctx import run1

RELU = {"program": "a0[0,1] a1[0,1]; t0 = maximum(a0, a1); t1 = minimum(t0, a1)"}
SHAPE = (64, 700)  # several blocks, the last one partial


def test_a_splat_operand_of_maximum_gives_the_same_bits() -> None:
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    x[0, :3] = [np.nan, -0.0, np.inf]
    zero = np.broadcast_to(np.float32(0.5), SHAPE)  # a splat slot: every stride 0
    out = np.empty(SHAPE, np.float32)
    run = prepare_fused([x, zero], out, RELU, [False, True])
    run()
    want = np.minimum(np.maximum(x, np.float32(0.5)), np.float32(0.5))
    np.testing.assert_array_equal(out, want)
    x[...] = -x  # the non-constant operand is read afresh on every run
    run()
    np.testing.assert_array_equal(out, np.minimum(np.maximum(x, np.float32(0.5)),
                                                  np.float32(0.5)))


def test_a_non_constant_one_value_operand_is_not_frozen() -> None:
    x = np.random.default_rng(1).standard_normal(SHAPE).astype(np.float32)
    bound = np.array([[0.25]], np.float32)  # a buffer of one value, broadcast at use
    out = np.empty(SHAPE, np.float32)
    run = prepare_fused([x, bound], out, RELU, [False, False])
    run()
    np.testing.assert_array_equal(out, np.full(SHAPE, 0.25, np.float32))
    bound[0, 0] = 2.0
    run()
    np.testing.assert_array_equal(out, np.maximum(x, np.float32(2.0)).clip(None, 2.0))


TANH_GELU = {"program": "a0[0,1] a1[0,1]; t0 = convert.f64(a0); t1 = multiply(t0, t0); "
                        "t2 = multiply(t1, t0); t3 = convert.f32(t2); t4 = add(a0, t3); "
                        "t5 = tanh(t4); t6 = exp(t5); t7 = log(a1); t8 = multiply(t6, t7)"}


def test_float64_ufunc_and_convert_steps_give_the_op_kernels_bits() -> None:
    """tanh, exp and log are called into the block as their kernels call them (in float64),
    converts between floats as casts: the bits of the ops run one by one on whole arrays."""
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(SHAPE) * 3).astype(np.float32)
    x[0, :4] = [np.nan, -0.0, np.inf, 1e30]  # 1e30 cubed overflows float32
    y = rng.uniform(-0.5, 4, SHAPE).astype(np.float32)  # log of negatives is NaN
    out = np.empty(SHAPE, np.float32)
    with np.errstate(all="ignore"):
        prepare_fused([x, y], out, TANH_GELU)()
        cube = run1("convert", [run1("multiply", [run1("multiply", [
            x.astype(np.float64), x.astype(np.float64)]), x.astype(np.float64)])],
            {"dtype": DType.F32})
        t5 = run1("tanh", [run1("add", [x, cube])])
        want = run1("multiply", [run1("exp", [t5]), run1("log", [y])])
    np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))


SCALED = {"program": "a0[0,1] a1[0,1] a2[0,1]; t0 = divide(a0, a1); t1 = add(t0, a2); "
                     "t2 = compare.LT(t1, a2); t3 = convert.f32(t2); t4 = multiply(t1, t3)"}


def test_one_value_operands_of_ufunc_steps_are_read_as_0d_views() -> None:
    """A one-value operand of divide, add, compare and multiply is called as a 0-d view
    (numpy's scalar path): the ops' bits, and a non-constant one follows its slot."""
    for shape in ((4, 32), SHAPE):
        x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
        x[0, :3] = [np.nan, -0.0, np.inf]
        scale = np.broadcast_to(np.float32(1.4142135), shape)  # a splat: every stride 0
        shift = np.array([[0.25]], np.float32)  # a buffer of one value
        out = np.empty(shape, np.float32)
        run = prepare_fused([x, scale, shift], out, SCALED, [False, True, False])
        for value in (0.25, -3.0):
            shift[0, 0] = value
            with np.errstate(all="ignore"):
                run()
                t1 = run1("add", [run1("divide", [x, np.ascontiguousarray(scale)]),
                                  np.full(shape, value, np.float32)])
                t3 = run1("convert", [run1("compare", [t1, np.full(shape, value, np.float32)],
                                           {"direction": "LT"})], {"dtype": DType.F32})
                want = run1("multiply", [t1, t3])
            np.testing.assert_array_equal(out.view(np.uint32), want.view(np.uint32))
        calls = run.__closure__[0].cell_contents  # type: ignore[index]
        assert any(a.ndim == 0 for c in calls for a in getattr(c, "args", ())
                   if isinstance(a, np.ndarray))


def test_a_select_of_a_broadcast_mask_gives_the_kernels_bits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A causal mask (a constant read as a broadcast view) choosing scaled scores or a
    splat: the select step is planned as the kernel's two copies into the block (the
    kernel itself is not called), with its values, the scores read afresh on every run."""
    monkeypatch.setattr(fused, "get_kernel", None)  # planning must not need a kernel
    rng = np.random.default_rng(4)
    shape = (3, 2, 128, 128)  # several blocks
    scores = rng.standard_normal(shape).astype(np.float32)
    mask = np.tril(np.ones((128, 128), bool))
    scale = np.broadcast_to(np.float32(0.125), shape)
    low = np.broadcast_to(np.float32(-1e30), shape)
    program = {"program": "a0[0,1,2,3] a1[0,1,2,3] a2[2,3] a3[0,1,2,3]; "
                          "t0 = multiply(a0, a1); t1 = select(a2, t0, a3)"}
    out = np.full(shape, np.nan, np.float32)
    run = prepare_fused([scores, scale, mask, low], out, program, [False, True, True, True])
    for _ in range(2):
        run()
        want = run1("select", [np.broadcast_to(mask, shape),
                               run1("multiply", [scores, scale]), low])
        np.testing.assert_array_equal(out, want)
        scores += 1
