"""rematerialize: the backward reads a segment's values from a copy placed right before
its first use, through an optimization_barrier, and the numbers do not change."""

from __future__ import annotations

import numpy as np

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import IRContext
from nxcc.ir.types import TensorType
from nxcc.ir.verifier import verify_module
from nxcc.passes.autodiff.differentiate import differentiate
from nxcc.passes.autodiff.losses import reduce_all
from nxcc.passes.autodiff.recompute import rematerialize
from nxcc.passes.common_subexpression_elimination import CommonSubexpressionElimination


def _module(recompute: bool) -> tuple[Module, Function, list]:
    module = Module("m")
    x = Value(TensorType(DType.F64, (4,)), "x")
    w = Value(TensorType(DType.F64, (4,)), "w")
    fn = module.add_function(Function("main", [x, w]))
    b = Builder(module, fn)
    h = b.tanh(x)
    start = len(fn.body)
    inner = b.exp(b.multiply(h, w))  # the segment: reads h (an activation) and w
    out = b.tanh(inner)
    segment = fn.body[start:]
    loss = reduce_all(b, out)
    backward_start = len(fn.body)
    fn.results = [loss, *differentiate(module, fn, [x, w], loss)]
    if recompute:
        rematerialize(fn, [segment], backward_start)
    return module, fn, segment


def test_backward_reads_the_copy() -> None:
    module, fn, segment = _module(True)
    verify_module(module)
    barriers = [op for op in fn.body if op.opcode == "optimization_barrier"]
    assert len(barriers) == 1
    # the activation h and (for the broadcast-free multiply) nothing else is read through it
    assert [v.owner.opcode for v in barriers[0].operands] == ["tanh"]
    originals = {id(r) for op in segment for r in op.results}
    start = fn.body.index(barriers[0])
    for op in fn.body[start:]:
        # only the segment's output (tanh's operand chain ends in `inner`'s copy) is kept
        assert not any(id(v) in originals and v.owner.opcode != "tanh" for v in op.operands)
    CommonSubexpressionElimination().run(module)
    assert any(op.opcode == "optimization_barrier" for op in fn.body)
    assert sum(op.opcode == "exp" for op in fn.body) == 2  # CSE kept the recomputed exp


def test_numbers_unchanged() -> None:
    args = [np.array([0.1, -0.4, 0.7, 1.2]), np.array([0.5, 1.5, -0.3, 0.9])]
    want = IRContext(_module(False)[0]).call("main", args)
    got = IRContext(_module(True)[0]).call("main", args)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(a, b)
