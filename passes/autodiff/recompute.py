"""Recomputation (rematerialisation) inside a differentiated function.

`rematerialize(fn, segments, backward_start)` takes a function whose body is a forward
program (`fn.body[:backward_start]`) followed by its backward (as `differentiate` appends
it) and a list of *segments*, each a run of forward ops (a transformer layer, an attention
core). For each segment, the backward's reads of values computed inside the segment are
redirected to a copy of the segment's ops placed right before the first backward op that
reads one of them, so the forward's values die as soon as the forward is done with them.
The copy recomputes only what the backward reads; values the segment hands to ops outside
it (its outputs) and returned values are kept, not recomputed.

The copy reads its activation inputs (values from before the segment) through one
`optimization_barrier`, and so does any of its ops that would otherwise depend only on
parameters (a norm weight's broadcast): every recomputed op then differs from its original
by an operand, so CSE cannot merge the copy back into the forward. Ops on constants only
are copied as they are (folding turns them into constants, which take no arena memory).

The result is ordinary IR; a pass-manager pass is not needed, as the decoder frontend calls
it on the functions it builds. Returns the number of ops added.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.core import Function, Op, Value


def _outputs(fn: Function, segment: Sequence[Op], backward_start: int) -> set[int]:
    """Ids of segment values read by forward ops outside it or returned."""
    inside = {id(op) for op in segment}
    out = {id(v) for v in fn.results}
    for op in fn.body[:backward_start]:
        if id(op) not in inside:
            out.update(id(v) for v in op.operands)
    return out


def _needed(segment: Sequence[Op], wanted: set[int]) -> list[Op]:
    """The ops of `segment` that compute the values `wanted` (ids), in order."""
    internal = {id(r) for op in segment for r in op.results}
    need = set(wanted)
    chosen = []
    for op in reversed(segment):
        if any(id(r) in need for r in op.results):
            chosen.append(op)
            need.update(id(v) for v in op.operands if id(v) in internal)
    return chosen[::-1]


def _copy(chosen: Sequence[Op], internal: set[int]) -> tuple[list[Op], dict[int, Value]]:
    """The barrier and the copies of `chosen` (mapping original value ids to copies)."""
    def outside(v: Value) -> bool:
        return id(v) not in internal and not (v.owner is not None
                                              and v.owner.opdef is ops.constant)

    tainted_in: list[Value] = []
    for op in chosen:  # activations (op results from before the segment)
        tainted_in += [v for v in op.operands if outside(v) and v.owner is not None
                       and v not in tainted_in]
    tainted = {id(v) for v in tainted_in} | _tainted(chosen, internal, tainted_in)
    for op in chosen:  # parameter-only ops: read their parameters through the barrier too
        if not any(id(v) in tainted for v in op.operands):
            params = [v for v in op.operands if outside(v) and v not in tainted_in]
            tainted_in += params
            tainted |= {id(v) for v in params}
            tainted |= _tainted(chosen, internal, tainted_in)
    barrier = Op(ops.optimization_barrier, tainted_in, [v.type for v in tainted_in]) \
        if tainted_in else None
    mapping: dict[int, Value] = {}
    if barrier is not None:
        mapping.update({id(v): r for v, r in zip(tainted_in, barrier.results, strict=True)})
    copies = [barrier] if barrier is not None else []
    for op in chosen:
        new = Op(op.opdef, [mapping.get(id(v), v) for v in op.operands],
                 [r.type for r in op.results], op.attrs)
        mapping.update({id(r): n for r, n in zip(op.results, new.results, strict=True)})
        copies.append(new)
    return copies, mapping


def _tainted(chosen: Sequence[Op], internal: set[int], roots: Sequence[Value]
                     ) -> set[int]:
    """Ids of the values of `chosen` that depend on `roots`."""
    tainted = {id(v) for v in roots}
    for op in chosen:
        if any(id(v) in tainted for v in op.operands):
            tainted.update(id(r) for r in op.results)
    return tainted & internal | {id(v) for v in roots}


def rematerialize(fn: Function, segments: Sequence[Sequence[Op]], backward_start: int) -> int:
    """Recompute each segment's values in the backward (see the module docstring)."""
    forward, backward = fn.body[:backward_start], fn.body[backward_start:]
    insert: dict[int, list[Op]] = {}
    added = 0
    for segment in segments:
        internal = {id(r) for op in segment for r in op.results}
        kept = _outputs(fn, segment, backward_start)
        users = [op for op in backward
                 if any(id(v) in internal and id(v) not in kept for v in op.operands)]
        if not users:
            continue
        wanted = {id(v) for op in users for v in op.operands
                  if id(v) in internal and id(v) not in kept}
        copies, mapping = _copy(_needed(segment, wanted), internal)
        insert.setdefault(id(users[0]), []).extend(copies)
        added += len(copies)
        for op in backward:
            op.operands = [mapping[id(v)] if id(v) in wanted else v for v in op.operands]
    body = list(forward)
    for op in backward:
        body += insert.get(id(op), [])
        body.append(op)
    fn.body = body
    return added
