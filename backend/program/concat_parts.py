"""Concatenations planned in place: each operand is written straight into its slice of the
result's buffer, and no instruction copies them together.

For each `concatenate` of a planned, non-empty result, an operand is a *part* written in
place when the op producing it writes an out of any strides (its step plan says so:
`StepPlan.strided_out`: convolutions, fused elementwise chains, copies) or is itself a
concatenation planned here (a DenseNet block's growing concatenations nest), it has one
result, is planned, is not a function result, and no other concatenation took it. Its
value then lives in the result's buffer (a view in the memory plan's sense: same root,
byte offset and strides), so the op writing it writes the slice. Every other operand
(a parameter, a weight, a value some other op wrote) is copied into its slice by a `copy`
instruction at the concatenation's place. A value used elsewhere too is still a part: it
is never written again, and its readers read the slice.

Concatenations are visited last first, so that when a concatenation is a part of a later
one, its own parts are placed inside its slice there (`sliced` of its layout).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.backend.program.view_layout import Layout, contiguous_strides, sliced
from nxcc.ir import ops
from nxcc.ir.attributes import attr_of
from nxcc.ir.core import Function, Value
from nxcc.ir.kernels.plan import PLANS


@dataclass
class ConcatPlan:
    """The parts and copies of the concatenations planned in place."""

    root: dict[int, int] = field(default_factory=dict)
    """id of a part (or a concatenation that is a part) -> id of the value owning the buffer."""
    layout: dict[int, Layout] = field(default_factory=dict)
    """id of a part -> its place in that buffer."""
    copies: dict[int, list[tuple[int, Layout]]] = field(default_factory=dict)
    """id of a concatenation's result -> (operand index, its slice) of each operand copied."""


def plan_concats(fn: Function, planned: set[int]) -> ConcatPlan:
    """Where each concatenation of `fn` planned in place puts its operands."""
    returned = {id(v) for v in fn.results}
    concats = [op for op in fn.body if op.opdef is ops.concatenate and op.results
               and id(op.result) in planned and op.result.type.size > 0]
    handled = {id(op.result) for op in concats}
    result = ConcatPlan()
    for op in reversed(concats):
        r = op.result
        result.copies[id(r)] = []
        base = result.layout.get(id(r)) or (0, contiguous_strides(r.type.shape,
                                                                  r.type.dtype.itemsize))
        top = result.root.get(id(r), id(r))
        dim = attr_of(op.attrs, "dimension", int)
        start = 0
        for k, v in enumerate(op.operands):
            starts = [0] * r.type.rank
            starts[dim] = start
            region = sliced(base, starts, (1,) * r.type.rank)
            start += v.type.shape[dim]
            if v.type.size == 0:
                continue
            if _written_in_place(v, planned, returned, handled, result):
                result.root[id(v)] = top
                result.layout[id(v)] = region
            else:
                result.copies[id(r)].append((k, region))
    return result


def _written_in_place(v: Value, planned: set[int], returned: set[int], handled: set[int],
                      taken: ConcatPlan) -> bool:
    owner = v.owner
    if (owner is None or len(owner.results) != 1 or id(v) not in planned
            or id(v) in returned or id(v) in taken.root):
        return False
    if id(v) in handled:
        return True
    entry = PLANS.get(owner.opdef)
    return entry is not None and entry.strided_out
