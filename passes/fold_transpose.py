"""fold-transpose: a dot_general reads a transposed operand directly (layout assignment).

`dot_general(transpose(x, perm), y)` is `dot_general(x, y)` with the lhs batch and
contracting dims mapped through `perm` (operand dim i is x's dim perm[i]), provided the free
dims keep their relative order (the result lists them in increasing dim order); likewise for
the rhs. The kernel then multiplies strided views of x: numpy's matmul hands BLAS a matrix
whose rows are a fixed stride apart, so the transposed copy (attention's heads split off the
hidden dim: [b, s, h, d] -> [b, h, s, d]) is never made. A transpose left without users is
removed by dead code elimination; one with other users stays for them.

The products are the same sums in the same order (the contracting dims keep their order).
Runs on each core's program before `fuse` (`passes/registry.py: CORE_PIPELINE`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints
from nxcc.ir.core import Module, Op, Value
from nxcc.ir.patterns import RewritePattern, Rewriter, rewrite_function
from nxcc.passes.dead_code_elimination import DeadCodeElimination

_SIDES = (("lhs_batch_dims", "lhs_contracting_dims"), ("rhs_batch_dims", "rhs_contracting_dims"))


def folded_dims(perm: Sequence[int], batch: Sequence[int],
                contracting: Sequence[int]) -> tuple[list[int], list[int]] | None:
    """(batch, contracting) of the transpose's operand, or None when the free dims would
    come out in another order."""
    used = {*batch, *contracting}
    free = [perm[d] for d in range(len(perm)) if d not in used]
    if free != sorted(free):
        return None
    return [perm[d] for d in batch], [perm[d] for d in contracting]


class _TransposeIntoDot(RewritePattern):
    ops = (ops.dot_general,)

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        operands = list(op.operands)
        attrs = dict(op.attrs)
        changed = False
        for side, (batch_key, contracting_key) in enumerate(_SIDES):
            producer = operands[side].owner
            if producer is None or producer.opcode != ops.transpose.name:
                continue
            perm = [int(p) for p in attr_ints(producer.attrs, "permutation")]
            dims = folded_dims(perm, attr_ints(attrs, batch_key), attr_ints(attrs, contracting_key))
            if dims is None:
                continue
            operands[side] = producer.operands[0]
            attrs[batch_key], attrs[contracting_key] = tuple(dims[0]), tuple(dims[1])
            changed = True
        if not changed:
            return None
        folded = rewriter.b.op(ops.dot_general, operands, attrs)
        folded.sharding, folded.name = op.result.sharding, op.result.name
        return [folded]


def _reads_a_transpose(op: Op) -> bool:
    return op.opcode == ops.dot_general.name and any(
        v.owner is not None and v.owner.opcode == ops.transpose.name for v in op.operands)


@dataclass(frozen=True)
class FoldTranspose:
    """Folds transposes into the dot_generals that read them (see the module docstring)."""

    name: ClassVar[str] = "fold-transpose"

    def run(self, module: Module) -> bool:
        patterns = [_TransposeIntoDot()]
        changed = False
        for fn in module.functions.values():
            if any(_reads_a_transpose(op) for op in fn.body):  # a cheap scan first: a
                changed |= bool(rewrite_function(module, fn, patterns))  # sweep costs more
        if changed:
            DeadCodeElimination().run(module)
        return changed
