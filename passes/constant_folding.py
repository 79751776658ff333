"""fold: evaluate ops whose operands are all constants, at compile time, with the kernels.

A result that is one value repeated stays a splat (one element of memory), so folding the
`ConstantOfShape` weights of a model never bloats it. Folding stops where it would
materialise a big tensor from small ones (a broadcast of a vector, an iota...): the result
must fit in `max(sum of operand bytes, SMALL_RESULT_BYTES)` unless it is a splat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nxcc.ir.attributes import Dense
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.interpreter import IRContext, evaluate_op
from nxcc.ir.opdef import get_opdef
from nxcc.ir.rewrite import constant_value, replace_uses

SMALL_RESULT_BYTES = 1 << 20
NEVER_FOLD = frozenset({
    "partition_id", "replica_id", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
    "collective_permute", "while", "constant",
    "random_bits",  # drawn at run time: a training step keys it by its step counter
})
# Ops whose result is a splat whenever their (array) operands are splats.
SPLAT_PRESERVING = frozenset({"broadcast_in_dim", "reshape", "transpose", "reverse", "slice",
                              "copy", "pad", "concatenate"})


@dataclass(frozen=True)
class ConstantFolding:
    """Replaces ops of constant operands by constant ops of their results."""

    name: ClassVar[str] = "fold"

    def run(self, module: Module) -> bool:
        ctx = IRContext(module)
        changed = False
        for fn in module.functions.values():
            changed |= _fold(fn, ctx)
        return changed


def _fold(fn: Function, ctx: IRContext) -> bool:
    mapping = fold_ops(fn, 0, ctx)
    if mapping:
        replace_uses(fn, mapping)
    return bool(mapping)


def fold_ops(fn: Function, start: int, ctx: IRContext) -> dict[Value, Value]:
    """Fold the ops `fn.body[start:]` whose operands are all constants, in place; returns
    the map from each folded result to its constant. Uses inside `fn.body[start:]` are
    rewritten; the caller rewrites any other uses (function results...)."""
    mapping: dict[Value, Value] = {}
    tail: list[Op] = []
    for op in fn.body[start:]:
        op.operands = [mapping.get(v, v) for v in op.operands]
        values = [constant_value(v) for v in op.operands]
        folded = None
        if op.opcode not in NEVER_FOLD and all(v is not None for v in values):
            folded = fold_op(op, values, ctx)  # type: ignore[arg-type]
        if folded is None:
            tail.append(op)
            continue
        for r, d in zip(op.results, folded, strict=True):
            new = Op("constant", [], [r.type], {"value": d}, [r.name])
            tail.append(new)
            mapping[r] = new.result
    fn.body[start:] = tail
    return mapping


def fold_op(op: Op, values: list[Dense], ctx: IRContext) -> list[Dense] | None:
    """`op`'s results as constants, given its operands' constant values; None when it is
    not worth folding (a big result from small inputs) or the kernel refuses."""
    splat_in = all(v.is_splat for v in values)
    elementwise = get_opdef(op.opcode).elementwise
    if values and splat_in and (elementwise or op.opcode in SPLAT_PRESERVING):
        # Evaluate on one element and keep the result a splat.
        ones = [np.asarray(v.splat_value).reshape((1,) * v.type.rank) for v in values]
        if elementwise:
            outs = evaluate_op(_scalar_twin(op, ones), ones, ctx)
        else:
            outs = [np.asarray(values[0].splat_value)]
            if op.opcode == "pad" and values[0].splat_value != values[1].splat_value:
                outs = None  # type: ignore[assignment]
            if op.opcode == "concatenate" and len({v.splat_value.tobytes() for v in values}) > 1:
                outs = None  # type: ignore[assignment]
        if outs is not None:
            return [Dense.splat(r.type, o.reshape(-1)[0]) for r, o in zip(op.results, outs,
                                                                          strict=True)]
    limit = max(sum(v.type.nbytes for v in values if not v.is_splat), SMALL_RESULT_BYTES)
    if sum(r.type.nbytes for r in op.results) > limit:
        return None
    try:
        outs = evaluate_op(op, [v.array for v in values], ctx)
    except (ArithmeticError, ValueError, FloatingPointError):
        return None
    return [Dense.of(o, r.type.dtype) for r, o in zip(op.results, outs, strict=True)]


def _scalar_twin(op: Op, ones: list[np.ndarray]) -> Op:
    """A copy of elementwise `op` on one-element operands of the same rank."""
    operands = [Value(v.type.with_shape(o.shape)) for v, o in zip(op.operands, ones, strict=True)]
    types = [r.type.with_shape((1,) * r.type.rank) for r in op.results]
    return Op(op.opcode, operands, types, op.attrs)
