"""Sharding rules of elementwise ops (unary, binary, compare, select, clamp, convert, copy).

- split d: every full-rank operand split on d (scalar operands of select and clamp stay
  replicated), the result split on d;
- partial: a pending sum passes through ops linear in it: negate, copy, float converts,
  add/subtract of two partial sums, multiply by a replicated factor, divide by a replicated
  divisor.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.core import Module, Op
from nxcc.ir.opdef import all_opdefs
from nxcc.passes.sharding.rules.strategy import (
    R,
    Strategy,
    partial,
    replicate,
    rule,
    split,
    splittable,
)

#: every op whose definition says `elementwise=True` has this rule.
ELEMENTWISE = tuple(opdef for opdef in all_opdefs() if opdef.elementwise)


@rule(*ELEMENTWISE)
def elementwise(op: Op, n: int, module: Module | None) -> list[Strategy]:
    t = op.results[0].type
    out = [replicate(op)]
    for d in range(t.rank):
        if not splittable(t.shape[d], n):
            continue
        operands = tuple(split(v.type.rank, d, n) if v.type.rank == t.rank else R
                         for v in op.operands)
        out.append(Strategy(f"split{d}", "split", operands,
                            tuple(split(r.type.rank, d, n) for r in op.results)))
    out.extend(_linear(op, n))
    return out


def _linear(op: Op, n: int) -> list[Strategy]:
    """The partial-sum passthroughs of `op`."""
    rank = op.results[0].type.rank
    p = partial(rank, n)
    code = op.opdef
    if not op.results[0].type.dtype.is_float:
        return []
    if code in (ops.negate, ops.copy) or (code is ops.convert
                                         and op.operands[0].type.dtype.is_float):
        return [Strategy("partial", "partial", (p,), (p,))]
    if code in (ops.add, ops.subtract):
        return [Strategy("partial", "partial", (p, p), (p,))]
    if code is ops.multiply:
        return [Strategy("partial lhs", "partial", (p, R), (p,)),
                Strategy("partial rhs", "partial", (R, p), (p,))]
    if code is ops.divide:
        return [Strategy("partial", "partial", (p, R), (p,))]
    return []

