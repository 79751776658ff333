"""shard-split-fused: split a fused projection that is only ever sliced apart.

PyTorch exports attention's query, key and value as one matrix product with a [D, 3D] weight
(`nn.Linear(D, 3 * D)`), a bias add, then a `Split` into three [.., D] blocks (`slice` ops
here). Split by columns over n cores, core 0 holds Q and the first part of K, so the
slices need the whole product back (an all-gather); what Megatron-LM splits is each of Q, K
and V by heads. This pass undoes the fusion before the sharding search so each block is a
projection of its own:

    x = dot_general(a, w)            q = dot_general(a, slice(w))      (slice of rhs free dim)
    y = add(x, b)                    q' = add(q, slice(b))
    q = slice(y) ...                 ...

Rules, applied until none applies (sinking the slices toward the weights):

- a value produced by an elementwise op whose every use is a unit-stride `slice`, the slices
  disjoint: each slice becomes the op on slices of its operands (operands of lower rank, the
  scalars of select and clamp, are kept);
- a value produced by `dot_general` whose every use is such a slice, each slicing only
  result dimensions that come from the rhs's free dimensions: each slice becomes a
  `dot_general` of the lhs and the matching slice of the rhs.

The slices may cover only part of the value (the rest was dead). The work done is the same
(disjoint slices) and the results are exactly equal (each output element is computed by the
same sum). Slices of constants are left for `fold` (run after this pass) to evaluate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.passes.ir_edit import make_op


@dataclass(frozen=True)
class SplitFused:
    """Sinks disjoint slices through elementwise ops and the rhs of dot_general."""

    name: ClassVar[str] = "shard-split-fused"

    def run(self, module: Module) -> bool:
        fn = module.entry_function
        changed = False
        while True:
            users = slice_users(fn)
            target = next((op for op in fn.body if rewritable(op, users.get(id(op), []))),
                          None)
            if target is None:
                return changed
            rewrite(module, fn, target, users[id(target)])
            changed = True


def slice_users(fn: Function) -> dict[int, list[Op]]:
    """id(op) -> its result's users when every one of them is a `slice` (ops with another
    user, several results or a returned result are left out)."""
    users: dict[int, list[Op]] = {}
    other: set[int] = {id(v.owner) for v in fn.results if v.owner is not None}
    for op in fn.body:
        for v in op.operands:
            owner = v.owner
            if owner is None:
                continue
            if op.opdef is ops.slice:
                users.setdefault(id(owner), []).append(op)
            else:
                other.add(id(owner))
    return {k: found for k, found in users.items() if k not in other}


def _bounds(s: Op) -> list[tuple[int, int]] | None:
    """(start, limit) per dimension of a unit-stride slice, None for a strided one."""
    if any(step != 1 for step in attr_ints(s.attrs, "strides")):
        return None
    return list(zip(attr_ints(s.attrs, "start_indices"), attr_ints(s.attrs, "limit_indices"),
                    strict=True))


def _disjoint(slices: list[Op]) -> bool:
    """Unit strides, and no element is in two of the slices (boxes that do not overlap)."""
    boxes = [_bounds(s) for s in slices]
    if any(b is None for b in boxes):
        return False
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a is not None and b is not None
            if all(lo1 < hi2 and lo2 < hi1 for (lo1, hi1), (lo2, hi2) in zip(a, b, strict=True)):
                return False
    return True


def _cut_dims(s: Op, shape: tuple[int, ...]) -> list[int]:
    """The dimensions a slice of a value of `shape` does not take whole."""
    return [d for d, (lo, hi) in enumerate(_bounds(s) or []) if (lo, hi) != (0, shape[d])]


def _rhs_free_result_dims(op: Op) -> dict[int, int]:
    """dot_general's result dimension -> the rhs dimension it comes from, for rhs free dims."""
    lhs, rhs = (v.type for v in op.operands)
    lb, rb = attr_ints(op.attrs, "lhs_batch_dims"), attr_ints(op.attrs, "rhs_batch_dims")
    lc = attr_ints(op.attrs, "lhs_contracting_dims")
    rc = attr_ints(op.attrs, "rhs_contracting_dims")
    lfree = [d for d in range(lhs.rank) if d not in lb and d not in lc]
    rfree = [d for d in range(rhs.rank) if d not in rb and d not in rc]
    base = len(lb) + len(lfree)
    return {base + j: d for j, d in enumerate(rfree)}


def rewritable(op: Op, slices: list[Op]) -> bool:
    """`op`'s result is only sliced, disjointly, and the slices can move to its operands."""
    if not slices or len(op.results) != 1 or not _disjoint(slices):
        return False
    shape = op.results[0].type.shape
    if op.opdef is ops.dot_general:
        free = _rhs_free_result_dims(op)
        return all(d in free for s in slices for d in _cut_dims(s, shape))
    return op.opdef is not ops.constant and op.opdef.elementwise


def _slice_of(module: Module, v: Value, box: list[tuple[int, int]]) -> Op:
    return make_op(module, ops.slice, [v], {"start_indices": [lo for lo, _ in box],
                                          "limit_indices": [hi for _, hi in box],
                                          "strides": [1] * len(box)})


def rewrite(module: Module, fn: Function, op: Op, slices: list[Op]) -> None:
    """Replace `op` and its slices by one op per slice on slices of `op`'s operands."""
    rank = op.results[0].type.rank
    new_body: list[Op] = []
    replaced: dict[int, Value] = {}
    for s in slices:
        box = _bounds(s)
        assert box is not None
        if op.opdef is ops.dot_general:
            rhs = op.operands[1]
            whole = [(0, n) for n in rhs.type.shape]
            for d, rd in _rhs_free_result_dims(op).items():
                whole[rd] = box[d]
            cut = _slice_of(module, rhs, whole)
            new_body.append(cut)
            operands = [op.operands[0], cut.result]
        else:
            operands = []
            for v in op.operands:
                if v.type.rank != rank:
                    operands.append(v)
                    continue
                cut = _slice_of(module, v, box)
                new_body.append(cut)
                operands.append(cut.result)
        new = make_op(module, op.opdef, operands, op.attrs)
        new.results[0].name = s.results[0].name
        new_body.append(new)
        replaced[id(s.results[0])] = new.results[0]
    gone = {id(op), *(id(s) for s in slices)}
    at = fn.body.index(op)
    body = fn.body[:at] + new_body + [o for o in fn.body[at + 1:]
                                                     if id(o) not in gone]
    for o in body:
        o.operands = [replaced.get(id(v), v) for v in o.operands]
    fn.results = [replaced.get(id(v), v) for v in fn.results]
    fn.body = body
