"""Specializing an SPMD program to one physical core: one program per core for the NEFF.

`specialize(module, core)` copies the partitioned module, replaces `partition_id` by the
constant `core`, then rewrites to a fixed point (`ir.patterns`): folds constants (so each
core keeps only its block of every weight), turns dynamic_slice with constant starts into
slice, select on a constant predicate into the chosen operand; and removes dead code.
Parameter and result shardings are kept: they tell the runtime which block of each input and
output the core reads and writes.
"""

from __future__ import annotations

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.clone import clone_module
from nxcc.ir.core import Module, Op, Value
from nxcc.ir.interpreter import IRContext
from nxcc.ir.patterns import Rewriter, apply_patterns, pattern
from nxcc.ir.rewrite import constant_value
from nxcc.passes.constant_folding import FoldConstantOperands
from nxcc.passes.dead_code_elimination import DeadCodeElimination


def specialize(module: Module, core: int) -> Module:
    """The program of physical core `core` of the SPMD `module` (which is left unchanged)."""
    out = clone_module(module)
    fn = out.entry_function
    shardings = [r.sharding for r in fn.results]
    for op in fn.body:
        if op.opdef is ops.partition_id:
            op.opdef = ops.constant
            op.attrs = {"value": Dense.of(np.uint32(core))}
    apply_patterns(out, [FoldConstantOperands(IRContext(out)), select_on_constant,
                         dynamic_slice_at_constant], root=out.entry)
    DeadCodeElimination().run(out)
    for r, s in zip(fn.results, shardings, strict=True):
        if r.sharding is None:
            r.sharding = s
    return out


def _constant_scalar(v: Value) -> int | bool | None:
    d = constant_value(v)
    if d is None or v.type.rank != 0:
        return None
    return d.array.reshape(-1)[0].item()


@pattern(ops.select)
def select_on_constant(op: Op, rewriter: Rewriter) -> list[Value] | None:
    """select(constant p, a, b) -> a if p else b (a scalar predicate)."""
    pred = _constant_scalar(op.operands[0])
    if pred is None:
        return None
    return [op.operands[1] if pred else op.operands[2]]


@pattern(ops.dynamic_slice)
def dynamic_slice_at_constant(op: Op, rewriter: Rewriter) -> list[Value] | None:
    """dynamic_slice(x, constant starts...) -> slice(x), the starts clamped as the op does."""
    starts = [_constant_scalar(v) for v in op.operands[1:]]
    if any(s is None for s in starts):
        return None
    x = op.operands[0]
    sizes = op.attrs["slice_sizes"]
    lo = [min(max(int(s), 0), n - k) for s, n, k in  # type: ignore[arg-type]
          zip(starts, x.type.shape, sizes, strict=True)]  # type: ignore[arg-type]
    new = rewriter.b.create("slice", [x], {
        "start_indices": tuple(lo),
        "limit_indices": tuple(a + k for a, k in zip(lo, sizes, strict=True)),  # type: ignore[arg-type]
        "strides": (1,) * x.type.rank})
    new.result.name = op.result.name
    new.result.sharding = op.result.sharding
    return [new.result]
