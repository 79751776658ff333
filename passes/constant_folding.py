"""fold: evaluate ops whose operands are all constants, at compile time, with the kernels.

A result that is one value repeated stays a splat (one element of memory), so folding the
`ConstantOfShape` weights of a model never bloats it. Folding stops where it would
materialise a big tensor from small ones (a broadcast of a vector, an iota...): the result
must fit in `max(sum of operand bytes, SMALL_RESULT_BYTES)` unless it is a splat, and a
broadcast of a non-splat constant (a bias) to more than `BROADCAST_FOLD_BYTES` is not folded:
it is read at use, as a broadcast view, by the fused op that consumes it (`passes/fusion`).

An iota of rank above one counts along one dimension only: it is rewritten as the 1-D iota
of that dimension (folded to a small constant) broadcast to the shape, which the fused op
that consumes it reads as a broadcast view (a cross-entropy's one-hot comparison of
[batch, seq, vocab] no longer fills an index array of that size on every execution).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_of
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.interpreter import IRContext, evaluate_op
from nxcc.ir.ops.collective import ASYNC_OPS
from nxcc.ir.patterns import RewritePattern, Rewriter, apply_patterns, rewrite_function
from nxcc.ir.rewrite import constant_value

SMALL_RESULT_BYTES = 1 << 20
BROADCAST_FOLD_BYTES = 4096  # tiny broadcasts still fold (index tables, masks of tests)
NEVER_FOLD = frozenset({
    ops.partition_id, ops.replica_id, ops.all_reduce, ops.all_gather, ops.reduce_scatter,
    ops.all_to_all, ops.collective_permute, ops.while_, ops.constant, ops.send, ops.send_done,
    ops.recv, ops.recv_done, *ASYNC_OPS,
    ops.random_bits,  # drawn at run time: a training step keys it by its step counter
})
# Ops whose result is a splat whenever their (array) operands are splats.
SPLAT_PRESERVING = frozenset({ops.broadcast_in_dim, ops.reshape, ops.transpose, ops.reverse,
                              ops.slice, ops.copy, ops.pad, ops.concatenate})


@dataclass(frozen=True)
class ConstantFolding:
    """Replaces ops of constant operands by constant ops of their results."""

    name: ClassVar[str] = "fold"

    def run(self, module: Module) -> bool:
        return apply_patterns(module, [FoldConstantOperands(IRContext(module)),
                                       IotaAsBroadcast()])


class FoldConstantOperands(RewritePattern):
    """op(constant, ...) -> constant: any op but `NEVER_FOLD` whose operands are all
    constants, evaluated with the kernels (`fold_op` says when it is not worth it)."""

    def __init__(self, ctx: IRContext) -> None:
        self.ctx = ctx

    def rewrite(self, op: Op, rewriter: Rewriter) -> list[Value] | None:
        if op.opdef in NEVER_FOLD:
            return None
        values = [constant_value(v) for v in op.operands]
        if any(v is None for v in values):
            return None
        folded = fold_op(op, values, self.ctx)  # type: ignore[arg-type]
        if folded is None:
            return None
        return [rewriter.insert(Op(ops.constant, [], [r.type], {"value": d}, [r.name])).result
                for r, d in zip(op.results, folded, strict=True)]


class IotaAsBroadcast(RewritePattern):
    """iota(shape, dimension) of rank > 1 -> broadcast_in_dim(iota([shape[dimension]]))."""

    ops = (ops.iota,)

    def rewrite(self, op: Op, rewriter: Rewriter) -> list[Value] | None:
        shape = op.result.type.shape
        d = attr_of(op.attrs, "dimension", int)
        if len(shape) < 2 or shape[d] == op.result.type.size:
            return None
        line = rewriter.b.iota(dtype=op.result.type.dtype, shape=(shape[d],), dimension=0)
        full = rewriter.b.broadcast_in_dim(line, shape=shape, broadcast_dimensions=(d,))
        full.name = op.result.name
        return [full]


def fold_ops(fn: Function, start: int, ctx: IRContext) -> dict[Value, Value]:
    """Fold the ops `fn.body[start:]` whose operands are all constants, in place; returns
    the map from each folded result to its constant. Uses inside `fn.body[start:]` and
    `fn.results` are rewritten."""
    return rewrite_function(ctx.module, fn, [FoldConstantOperands(ctx)], start)


def fold_op(op: Op, values: list[Dense], ctx: IRContext) -> list[Dense] | None:
    """`op`'s results as constants, given its operands' constant values; None when it is
    not worth folding (a big result from small inputs) or the kernel refuses."""
    splat_in = all(v.is_splat for v in values)
    opdef = op.opdef
    if values and splat_in and (opdef.elementwise or opdef in SPLAT_PRESERVING):
        # Evaluate on one element and keep the result a splat.
        ones = [np.asarray(v.splat_value).reshape((1,) * v.type.rank) for v in values]
        if opdef.elementwise:
            outs = evaluate_op(_scalar_twin(op, ones), ones, ctx)
        else:
            outs = [np.asarray(values[0].splat_value)]
            if opdef is ops.pad and values[0].splat_value != values[1].splat_value:
                outs = None
            if opdef is ops.concatenate and len({v.splat_value.tobytes() for v in values}) > 1:
                outs = None
        if outs is not None:
            return [Dense.splat(r.type, o.reshape(-1)[0]) for r, o in zip(op.results, outs,
                                                                          strict=True)]
    if opdef is ops.broadcast_in_dim and op.result.type.nbytes > BROADCAST_FOLD_BYTES:
        return None  # a bias stays small: broadcast at use, never materialised
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
    return Op(op.opdef, operands, types, op.attrs)
