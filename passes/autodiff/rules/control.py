"""Gradient rule of ``while`` loops with a static trip count (scans over time or layers).

A loop `outs = while(state)` whose condition is ``counter < N`` on a counter that starts at
a constant and the body increments by 1 runs a known number of times T. Its gradient is two
more loops, built where the backward program is:

1. record: the loop again, storing at each iteration the state elements the body changes
   (invariant elements, such as weights passed through, are not stored) into [T, ...]
   stacks;
2. reverse: T iterations k = T-1 .. 0 that read the state of iteration k from the stacks,
   inline the body on it and backpropagate the carried cotangents through it
   (`differentiate.backpropagate`), the cotangents of invariant elements accumulating.

The reverse loop's final cotangents are those of the loop's operands. A loop without a
static trip count is refused (ValueError naming why).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol, attr_of
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import constant_value
from nxcc.ir.types import TensorType
from nxcc.passes.autodiff.backprop import backpropagate
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule

S32 = TensorType(DType.S32, ())


def _scalar_constant(v: Value) -> int | None:
    d = constant_value(v)
    if d is None or d.type.size != 1 or not d.type.dtype.is_integer:
        return None
    return int(np.asarray(d.array).reshape(-1)[0])


def static_trip_count(op: Op, cond: Function, body: Function) -> int:
    """T for a loop counting a state element from a constant to a constant bound by 1."""
    test = cond.results[0].owner if cond.results else None
    if test is None or test.opdef is not ops.compare:
        raise ValueError("the loop's condition is not a comparison of a counter")
    lhs, rhs = test.operands
    direction = attr_of(test.attrs, "direction", str)
    if direction in ("GT", "GE"):
        lhs, rhs = rhs, lhs
        direction = {"GT": "LT", "GE": "LE"}[direction]
    bound = _scalar_constant(rhs)
    if direction not in ("LT", "LE") or bound is None or lhs not in cond.params:
        raise ValueError("the loop's condition is not 'counter < constant'")
    index = cond.params.index(lhs)
    start = _scalar_constant(op.operands[index])
    step = body.results[index].owner
    if start is None or step is None or step.opdef is not ops.add:
        raise ValueError("the loop's counter does not start at a constant or is not "
                         "incremented")
    a, b = step.operands
    one = b if a is body.params[index] else a if b is body.params[index] else None
    if one is None or _scalar_constant(one) != 1:
        raise ValueError("the loop's counter is not incremented by 1")
    return max(0, bound + (direction == "LE") - start)


def inline(b: Builder, fn: Function, args: Sequence[Value]) -> list[Value]:
    """`fn`'s ops appended through `b` on `args`; its results."""
    mapping: dict[int, Value] = {id(p): a for p, a in zip(fn.params, args, strict=True)}
    for op in fn.body:
        new = Op(op.opdef, [mapping[id(v)] for v in op.operands],
                 [r.type for r in op.results], op.attrs)
        b.function.body.append(new)
        mapping.update({id(r): n for r, n in zip(op.results, new.results, strict=True)})
    return [mapping[id(r)] for r in fn.results]


def _new_function(module: Module, base: str, types: Sequence[TensorType]
                  ) -> tuple[Function, Builder]:
    fn = module.add_function(Function(module.unique_function_name(base),
                                      [Value(t, f"a{i}") for i, t in enumerate(types)]))
    return fn, Builder(module, fn)


def _counter_below(module: Module, types: Sequence[TensorType], trip: int) -> Symbol:
    """A condition on (counter, ...): counter < trip."""
    fn, b = _new_function(module, "grad_cond", types)
    fn.results.append(b.compare(fn.params[0], b.splat(trip, S32), direction="LT"))
    return Symbol(fn.name)


def _zero_index(b: Builder) -> Value:
    return b.splat(0, S32)


def _record(ctx: GradContext, op: Op, body: Function, carried: list[int], trip: int
            ) -> list[Value]:
    """The [T, ...] stacks of the carried elements at the start of every iteration."""
    module, state = ctx.b.module, op.operands
    stacks = [ctx.zeros(TensorType(state[i].type.dtype, (trip, *state[i].type.shape)))
              for i in carried]
    types = [S32, *(v.type for v in state), *(s.type for s in stacks)]
    fn, b = _new_function(module, "grad_record", types)
    j, xs, ss = fn.params[0], fn.params[1:1 + len(state)], fn.params[1 + len(state):]
    outs = inline(b, body, xs)
    new_stacks = []
    for i, s in zip(carried, ss, strict=True):
        row = b.reshape(xs[i], (1, *xs[i].type.shape))
        zeros = [_zero_index(b)] * xs[i].type.rank
        new_stacks.append(b.op(ops.dynamic_update_slice, [s, row, j, *zeros]))
    fn.results = [b.add(j, b.splat(1, S32)), *outs, *new_stacks]
    results = ctx.b.ops("while", [_zero_index(ctx.b), *state, *stacks], {
        "condition": _counter_below(module, types, trip), "body": Symbol(fn.name)})
    return results[1 + len(state):]


def _reverse_body(module: Module, body: Function, types: list[TensorType],
                  carried: list[int], floats: list[int], trip: int) -> Symbol:
    """(j, cts..., stacks..., invariants...) -> the same after backpropagating iteration
    T-1-j."""
    state_types = [p.type for p in body.params]
    fn, b = _new_function(module, "grad_reverse", types)
    nf, nc = len(floats), len(carried)
    j, cts = fn.params[0], fn.params[1:1 + nf]
    stacks, invariants = fn.params[1 + nf:1 + nf + nc], fn.params[1 + nf + nc:]
    k = b.subtract(b.splat(trip - 1, S32), j)
    x: list[Value] = []
    inv = iter(invariants)
    stack_of = dict(zip(carried, stacks, strict=True))
    for i, t in enumerate(state_types):
        if i in stack_of:
            zeros = [_zero_index(b)] * t.rank
            row = b.op(ops.dynamic_slice, [stack_of[i], k, *zeros],
                       {"slice_sizes": (1, *t.shape)})
            x.append(b.reshape(row, t.shape))
        else:
            x.append(next(inv))
    outs = inline(b, body, x)
    seeds: dict[Value, Value] = {}
    for i, ct in zip(floats, cts, strict=True):
        prior = seeds.get(outs[i])
        seeds[outs[i]] = ct if prior is None else b.add(prior, ct)
    new_cts = backpropagate(module, fn, [x[i] for i in floats], seeds)
    fn.results = [b.add(j, b.splat(1, S32)), *new_cts, *stacks, *invariants]
    return Symbol(fn.name)


@gradient_rule(ops.while_, multi_result=True)
def _while(ctx: GradContext, op: Op, cts: list[Value | None]) -> Sequence[Value | None]:
    module = ctx.b.module
    cond = module.functions[attr_of(op.attrs, "condition", Symbol).name]
    body = module.functions[attr_of(op.attrs, "body", Symbol).name]
    trip = static_trip_count(op, cond, body)
    state = op.operands
    carried = [i for i, (p, r) in enumerate(zip(body.params, body.results, strict=True))
               if r is not p]
    floats = [i for i, v in enumerate(state) if v.type.dtype.is_float]
    if trip == 0:  # the loop returns its operands
        return [(cts[i] or ctx.zeros(v.type)) if i in floats else None
                for i, v in enumerate(state)]
    stacks = _record(ctx, op, body, carried, trip)
    invariants = [v for i, v in enumerate(state) if i not in carried]
    start = [cts[i] or ctx.zeros(state[i].type) for i in floats]
    init = [_zero_index(ctx.b), *start, *stacks, *invariants]
    types = [v.type for v in init]
    results = ctx.b.ops("while", init, {
        "condition": _counter_below(module, types, trip),
        "body": _reverse_body(module, body, types, carried, floats, trip)})
    grads: list[Value | None] = [None] * len(state)
    for i, g in zip(floats, results[1:1 + len(floats)], strict=True):
        grads[i] = g
    return grads
