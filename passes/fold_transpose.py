"""fold-transpose: a dot_general reads a transposed operand directly (layout assignment).

`dot_general(transpose(x, perm), y)` is `dot_general(x, y)` with the lhs batch and
contracting dims mapped through `perm` (operand dim i is x's dim perm[i]), provided the free
dims keep their relative order (the result lists them in increasing dim order); likewise for
the rhs. The kernel then multiplies strided views of x: numpy's matmul hands BLAS a matrix
whose rows are a fixed stride apart, so the transposed copy (attention's heads split off the
hidden dim: [b, s, h, d] -> [b, h, s, d]) is never made. A transpose left without users is
removed by dead code elimination; one with other users stays for them.

Two more rewrites remove the transposes a gradient leaves after a product:

- `transpose(dot_general(x, y))` whose permutation only puts the rhs free dims before the
  lhs free dims (the batch dims first, in order) is `dot_general(y, x)`, when the transpose
  is the product's only user (a weight's gradient: dW = dY^T X computed as (X^T dY)^T);
- `transpose(transpose(x, p), q)` is one transpose of x (none at all when they cancel);
- a transpose by the identity permutation (a gradient's product already in its operand's
  layout) is its operand, not a copy of it.

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
from nxcc.ir.rewrite import LiveUseCounts
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

    def __init__(self, uses: LiveUseCounts) -> None:
        self.uses = uses

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        operands = list(op.operands)
        attrs = dict(op.attrs)
        changed = False
        for side, (batch_key, contracting_key) in enumerate(_SIDES):
            producer = operands[side].owner
            if producer is None or producer.opdef is not ops.transpose:
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
        return [self.uses.replaced(op.result, folded)]


def swapped_product(perm: Sequence[int], batch: int, lhs_free: int) -> bool:
    """Whether transposing a product's result (`batch` batch dims, `lhs_free` lhs free
    dims, then the rhs's) by `perm` gives the product with its operands swapped."""
    n = len(perm)
    return list(perm) == [*range(batch), *range(batch + lhs_free, n),
                          *range(batch, batch + lhs_free)] and batch + lhs_free < n


class _ProductTransposed(RewritePattern):
    """transpose(dot_general(x, y)) -> dot_general(y, x) (see the module docstring)."""

    ops = (ops.transpose,)

    def __init__(self, uses: LiveUseCounts) -> None:
        self.uses = uses

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        product = op.operands[0].owner
        if product is None or product.opdef is not ops.dot_general or \
                self.uses.of(op.operands[0]) != 1:
            return None
        a = product.attrs
        lhs = product.operands[0]
        batch = len(attr_ints(a, "lhs_batch_dims"))
        lhs_free = lhs.type.rank - batch - len(attr_ints(a, "lhs_contracting_dims"))
        perm = attr_ints(op.attrs, "permutation")
        if not swapped_product(perm, batch, lhs_free) or lhs_free == 0:
            return None
        attrs = {**a, "lhs_batch_dims": a["rhs_batch_dims"],
                 "rhs_batch_dims": a["lhs_batch_dims"],
                 "lhs_contracting_dims": a["rhs_contracting_dims"],
                 "rhs_contracting_dims": a["lhs_contracting_dims"]}
        swapped = rewriter.b.op(ops.dot_general, [product.operands[1], lhs], attrs)
        swapped.sharding, swapped.name = op.result.sharding, op.result.name
        return [self.uses.replaced(op.result, swapped)]


def _identity(perm: Sequence[int]) -> bool:
    """A permutation that moves no dimension."""
    return list(perm) == sorted(perm)


class _TransposeOfTranspose(RewritePattern):
    """transpose(transpose(x, p), q) -> transpose(x, p[q]), or x when that is no change;
    transpose(x, identity) -> x."""

    ops = (ops.transpose,)

    def __init__(self, uses: LiveUseCounts) -> None:
        self.uses = uses

    def rewrite(self, op: Op, rewriter: Rewriter) -> Sequence[Value] | None:
        if _identity(attr_ints(op.attrs, "permutation")):
            return [self.uses.replaced(op.result, op.operands[0])]
        inner = op.operands[0].owner
        if inner is None or inner.opdef is not ops.transpose:
            return None
        p = attr_ints(inner.attrs, "permutation")
        q = attr_ints(op.attrs, "permutation")
        perm = [p[d] for d in q]
        if _identity(perm):
            return [self.uses.replaced(op.result, inner.operands[0])]
        one = rewriter.b.op(ops.transpose, [inner.operands[0]], {"permutation": perm})
        one.sharding, one.name = op.result.sharding, op.result.name
        return [self.uses.replaced(op.result, one)]


def _foldable(op: Op) -> bool:
    """Whether `op` may match a pattern: a product reading a transpose, a transpose of a
    product or of a transpose, an identity transpose."""
    if op.opdef is ops.dot_general:
        return any(v.owner is not None and v.owner.opdef is ops.transpose
                   for v in op.operands)
    if op.opdef is ops.transpose:
        inner = op.operands[0].owner
        return _identity(attr_ints(op.attrs, "permutation")) or (inner is not None
                                 and inner.opdef in (ops.dot_general, ops.transpose))
    return False


@dataclass(frozen=True)
class FoldTranspose:
    """Folds transposes into the dot_generals that read them (see the module docstring)."""

    name: ClassVar[str] = "fold-transpose"

    def run(self, module: Module) -> bool:
        changed = False
        for fn in module.functions.values():
            if any(_foldable(op) for op in fn.body):  # a cheap scan first: a sweep costs more
                uses = LiveUseCounts(fn)
                patterns = [_TransposeIntoDot(uses), _TransposeOfTranspose(uses),
                            _ProductTransposed(uses)]
                changed |= bool(rewrite_function(module, fn, patterns))
        if changed:
            DeadCodeElimination().run(module)
        return changed
