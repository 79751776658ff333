"""Splitting a differentiated function into its forward and its backward, with a stash.

A pipeline stage runs its forward for a micro-batch long before that micro-batch's
backward, so the two must be separate programs. `split_forward(fn, start, x_out, keep,
name)` takes a function whose body is a forward (`fn.body[:start]`) followed by its
backward (as `backpropagate` appends it, with whatever recomputation `rematerialize`
placed there) and whose parameters are `keep` inputs of both halves followed by inputs of
the backward alone (the output gradient). It returns the forward as a new function

    name(*fn.params[:keep]) -> (x_out, *stash)

where `stash` is the least-bytes set of forward values from which the backward can have
every forward value it reads (`stash_cut.choose_stash`: a minimum cut), and rewrites `fn`
in place into the backward

    fn(*fn.params[:keep], *stash, *fn.params[keep:]) -> fn's results

which reads the stash, and repeats the cheap forward ops (elementwise, data movement,
reductions, a sequence-parallel all_gather) that turn the stash into what it reads, each
copy placed right before the first backward op that needs it. Constants are copied, not
stashed. With `rematerialize`'s segments the backward reads only each segment's inputs, so
what is stashed is at most what the recomputation policy keeps.
"""

from __future__ import annotations

from nxcc.ir.core import Function, Op, Value
from nxcc.passes.autodiff.stash_cut import choose_stash


def split_forward(fn: Function, start: int, x_out: Value, keep: int, name: str) -> Function:
    """The forward of `fn` as a new function `name`; `fn` becomes the backward (see the
    module docstring)."""
    forward, backward = fn.body[:start], fn.body[start:]
    produced = {id(r) for op in forward for r in op.results}
    reads: dict[int, Value] = {}
    for v in [*(v for op in backward for v in op.operands), *fn.results]:
        if id(v) in produced:
            reads.setdefault(id(v), v)
    choice = choose_stash(forward, fn.params[:keep], list(reads.values()))
    fwd = Function(name, list(fn.params[:keep]))
    fwd.body = list(forward)
    fwd.results = [x_out, *choice.stash]
    fwd.result_names = ["x_out", *(f"stash.{i}" for i in range(len(choice.stash)))]

    mapping: dict[int, Value] = {}
    new_params = []
    for p in fn.params:
        q = Value(p.type, p.name)
        mapping[id(p)] = q
        new_params.append(q)
    stash_params = []
    for i, v in enumerate(choice.stash):
        q = Value(v.type, f"stash.{i}")
        mapping[id(v)] = q
        stash_params.append(q)
    body: list[Op] = []

    def available(v: Value) -> Value:
        """`v` in the backward: a parameter, a stash input or a copy of its op placed
        (with the copies it needs) before the op being rewritten."""
        if id(v) not in produced or id(v) in mapping:
            return mapping.get(id(v), v)
        todo = [v.owner]
        while todo:  # post-order: an op's copy after its operands' copies
            op = todo[-1]
            assert op is not None and id(op) in choice.recompute
            missing = [u.owner for u in op.operands
                       if id(u) in produced and id(u) not in mapping]
            if missing:
                todo += missing
                continue
            todo.pop()
            if id(op.results[0]) in mapping:
                continue
            copy = Op(op.opdef, [mapping.get(id(u), u) for u in op.operands],
                      [r.type for r in op.results], dict(op.attrs))
            for old, new in zip(op.results, copy.results, strict=True):
                mapping[id(old)] = new
            body.append(copy)
        return mapping[id(v)]

    for op in backward:
        op.operands = [available(v) for v in op.operands]
        body.append(op)
    fn.results = [available(v) for v in fn.results]
    fn.params = [*new_params[:keep], *stash_params, *new_params[keep:]]
    fn.body = body
    return fwd
