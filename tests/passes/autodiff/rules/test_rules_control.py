"""Gradients through while loops with a static trip count, against finite differences, and
the refusal of a loop whose trip count is not static."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.differentiate import GradientError
from tests.passes.autodiff.gradcheck import check_gradients

S32 = TensorType(DType.S32, ())


def rnn(b: Builder, params: list[Value], steps: int, bound_from_state: bool = False) -> Value:
    """h <- tanh(W h + x[t]) + 0.5 h for t < steps; W is passed through unchanged, x read
    at the counter; a second carried value accumulates h * h."""
    h0, w, xs = params
    module = b.module
    types = [S32, h0.type, w.type, xs.type, h0.type, S32]
    cond = module.add_function(Function(module.unique_function_name("cond"),
                                        [Value(t) for t in types]))
    cb = Builder(module, cond)
    limit = cond.params[5] if bound_from_state else cb.splat(steps, S32)
    cond.results.append(cb.compare(cond.params[0], limit, direction="LT"))
    body = module.add_function(Function(module.unique_function_name("body"),
                                        [Value(t) for t in types]))
    bb = Builder(module, body)
    t, h, wp, xp, acc, n = body.params
    zero = bb.splat(0, S32)
    x_t = bb.reshape(bb.op("dynamic_slice", [xp, t, zero],
                           {"slice_sizes": (1, h.type.shape[0])}), h.type.shape)
    wh = bb.dot_general(wp, h, lhs_contracting_dims=(1,), rhs_contracting_dims=(0,))
    new_h = bb.add(bb.tanh(bb.add(wh, x_t)), bb.multiply(h, bb.splat(0.5, h.type)))
    body.results = [bb.add(t, bb.splat(1, S32)), new_h, wp, xp,
                    bb.add(acc, bb.multiply(new_h, new_h)), n]
    out = b.ops("while", [b.splat(0, S32), h0, w, xs, b.splat(0.0, h0.type),
                          b.splat(steps, S32)],
                {"condition": Symbol(cond.name), "body": Symbol(body.name)})
    return b.add(out[1], out[4])


@settings(max_examples=6, deadline=None)
@given(size=st.integers(1, 3), steps=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_rnn_loop_gradients(size: int, steps: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    inputs = {"h0": rng.normal(size=size), "w": rng.normal(size=(size, size)) * 0.7,
              "xs": rng.normal(size=(max(steps, 1), size))}
    check_gradients(lambda b, p: rnn(b, p, steps), inputs, seed)


def test_a_loop_without_a_static_trip_count_is_refused() -> None:
    rng = np.random.default_rng(0)
    inputs = {"h0": rng.normal(size=2), "w": rng.normal(size=(2, 2)),
              "xs": rng.normal(size=(3, 2))}
    with pytest.raises(GradientError, match="'while'.*counter < constant"):
        check_gradients(lambda b, p: rnn(b, p, 3, bound_from_state=True), inputs)
