"""The Megatron-LM starting point of the sharding search: column- then row-parallel.

Megatron-LM splits a transformer layer so that each block needs one all-reduce: the first
projection of a block (attention's query, key and value; the MLP's first linear layer) is
column-parallel, what follows runs on the local columns (attention per local head, the
activation function), and the block's last projection (attention's output; the MLP's second
linear layer) is row-parallel, its partial sums all-reduced once.

`tensor_parallel_start` gives that choice for any function in dataflow terms. Anchors are
visited in program order; each one's *nearest anchors* are the anchors reached from its
operands through non-anchor ops. An anchor whose rhs is a weight (a constant) is row-parallel
when a nearest anchor leaves its result split by columns, else column-parallel; an anchor
of two activations (attention's scores and context) keeps its inputs' split and is left to
propagation (it takes the batch split over heads that agrees with them). A row-parallel
anchor's result is a partial sum (all-reduced to whole), so what follows it starts a new
column-parallel block.

Coordinate descent cannot reach this plan from the data-parallel starts one anchor at a
time: each single change on the way costs a reshard, so it is offered as a start of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from nxcc.ir.core import Op, Value
from nxcc.ir.rewrite import constant_value
from nxcc.passes.sharding.rules import Strategy


def nearest_anchors(op: Op, anchors: set[int]) -> list[Op]:
    """The anchors (ids in `anchors`) reached from `op`'s operands without passing through
    another anchor."""
    seen: set[int] = set()
    stack: list[Value] = list(op.operands)
    found: list[Op] = []
    while stack:
        owner = stack.pop().owner
        if owner is None or id(owner) in seen:
            continue
        seen.add(id(owner))
        if id(owner) in anchors:
            found.append(owner)
        else:
            stack.extend(owner.operands)
    return found


def tensor_parallel_start(anchors: Sequence[Op | Value],
                          options: Mapping[int, list[Strategy]]) -> dict[int, Strategy]:
    """Column- or row-parallel strategies for the weight anchors (see the module doc); the
    anchors of two activations, and those with no such candidate, are left out."""
    ops = [a for a in anchors if isinstance(a, Op)]
    ids = {id(op) for op in ops}
    split_out: dict[int, bool] = {}
    chosen: dict[int, Strategy] = {}
    for op in ops:
        after_split = any(split_out.get(id(x), False) for x in nearest_anchors(op, ids))
        if len(op.operands) < 2 or constant_value(op.operands[1]) is None:
            split_out[id(op)] = after_split
            continue
        kind = "row" if after_split else "column"
        found = next((s for s in options[id(op)] if s.kind == kind), None)
        if found is not None:
            chosen[id(op)] = found
        split_out[id(op)] = found is not None and kind == "column"
    return chosen
