"""Small helpers for passes that insert ops in the middle of a function body.

`Builder` appends at the end of a function; a pass that rewrites a body in order builds the
new ops with `make_op` and collects them in a new body list instead.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef


def make_op(module: Module, opdef: OpDef, operands: Sequence[Value],
            attrs: Mapping[str, object] | None = None) -> Op:
    """A new op (not placed in any body), attributes checked and result types inferred."""
    checked = opdef.check_attrs(attrs or {})
    return Op(opdef, operands, opdef.infer([v.type for v in operands], checked, module),
              checked)


def scalar_constant(module: Module, value: float | int, dtype: DType) -> Op:
    """A rank-0 constant op holding `value` as `dtype`."""
    return make_op(module, ops.constant, [], {"value": Dense.of(np.asarray(value), dtype)})


def substitute_results(fn: Function, subst: Mapping[int, Value]) -> None:
    """Replace each result of `fn` whose id is a key of `subst` by the value it maps to
    (a pass that rebuilds a body remaps the operands of the ops as it goes)."""
    fn.results = [subst.get(id(v), v) for v in fn.results]


def replace_ops(fn: Function, replacements: Mapping[int, Sequence[Op]],
                dropped: Collection[int]) -> None:
    """Rebuild `fn.body`: each op whose id is a key of `replacements` replaced, at its place,
    by those ops (the last one's result taking over the uses of its one result), the ops
    whose ids are in `dropped` removed, and every operand and function result remapped."""
    results = {id(op.result): made[-1].result for op in fn.body
               if (made := replacements.get(id(op))) is not None}
    body: list[Op] = []
    for op in fn.body:
        if id(op) in dropped:
            continue
        for placed in replacements.get(id(op), (op,)):
            placed.operands = [results.get(id(v), v) for v in placed.operands]
            body.append(placed)
    fn.body = body
    substitute_results(fn, results)
