"""The fused_elementwise plan made once at load (`prepare_fused` with `constant` flags):
a constant one-value operand of maximum/minimum is read from a block-sized array, and a
non-constant one still follows its slot."""

from __future__ import annotations

import numpy as np

from nxcc.ir.kernels.fused import prepare_fused

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
