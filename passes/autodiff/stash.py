"""Splitting a differentiated function into its forward and its backward, with a stash.

A pipeline stage runs its forward for a micro-batch long before that micro-batch's
backward, so the two must be separate programs. `split_forward(fn, start, x_out, keep,
name)` takes a function whose body is a forward (`fn.body[:start]`) followed by its
backward (as `backpropagate` appends it, with whatever recomputation `rematerialize`
placed there) and whose parameters are `keep` inputs of both halves followed by inputs of
the backward alone (the output gradient). It returns the forward as a new function

    name(*fn.params[:keep]) -> (x_out, *stash)

where `stash` is every forward value the backward reads (activations the backward needs,
in order of first use), and rewrites `fn` in place into the backward

    fn(*fn.params[:keep], *stash, *fn.params[keep:]) -> fn's results

which reads the stash instead of recomputing it. Constants are copied, not stashed. With
`rematerialize`'s segments the backward reads only each segment's inputs, so what is
stashed is exactly what the recomputation policy keeps.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.core import Function, Op, Value


def _forward_value(v: Value, forward_ops: set[int]) -> bool:
    return v.owner is not None and id(v.owner) in forward_ops


def split_forward(fn: Function, start: int, x_out: Value, keep: int, name: str) -> Function:
    """The forward of `fn` as a new function `name`; `fn` becomes the backward (see the
    module docstring)."""
    forward, backward = fn.body[:start], fn.body[start:]
    in_forward = {id(op) for op in forward}
    consts: dict[int, Op] = {}
    stash: dict[int, Value] = {}
    readers = [v for op in backward for v in op.operands] + list(fn.results)
    for v in readers:
        if not _forward_value(v, in_forward) or id(v) in stash or id(v) in consts:
            continue
        if v.owner is not None and v.owner.opdef is ops.constant:
            consts[id(v)] = v.owner
        else:
            stash[id(v)] = v
    fwd = Function(name, list(fn.params[:keep]))
    fwd.body = list(forward)
    fwd.results = [x_out, *stash.values()]
    fwd.result_names = ["x_out", *(f"stash.{i}" for i in range(len(stash)))]

    mapping: dict[int, Value] = {}
    new_params = []
    for p in fn.params:
        q = Value(p.type, p.name)
        mapping[id(p)] = q
        new_params.append(q)
    stash_params = []
    for i, v in enumerate(stash.values()):
        q = Value(v.type, f"stash.{i}")
        mapping[id(v)] = q
        stash_params.append(q)
    copies = []
    for op in consts.values():
        copy = Op(op.opdef, [], [r.type for r in op.results], dict(op.attrs))
        for old, new in zip(op.results, copy.results, strict=True):
            mapping[id(old)] = new
        copies.append(copy)
    for op in backward:
        op.operands = [mapping.get(id(v), v) for v in op.operands]
    fn.params = [*new_params[:keep], *stash_params, *new_params[keep:]]
    fn.body = [*copies, *backward]
    fn.results = [mapping.get(id(v), v) for v in fn.results]
    return fwd
