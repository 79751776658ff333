"""Backpropagation over the IR: the vector-Jacobian product of a function's ops.

`backpropagate(module, fn, wrt, seeds)` walks the ops of `fn` that lie on a differentiable
path from a value of `wrt` to a value of `seeds`, last to first, applying each op's gradient
rule (`registry`; the rules register when `passes.autodiff.rules` is imported, as
`differentiate` does), and appends the backward program to `fn.body` as ordinary core ops.
A value is differentiable when it has a floating-point type; an op on a differentiable path
whose op has no rule is a `GradientError` naming it, never a silent zero.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_of


class GradientError(ValueError):
    """The function cannot be differentiated as asked (the message names the op or value)."""


def active_values(fn: Function, wrt: Sequence[Value],
                  stop: Collection[Value] = ()) -> set[int]:
    """Ids of the floating-point values of `fn` that depend on a value of `wrt` (through
    no value of `stop`: those are treated as constants)."""
    stopped = {id(v) for v in stop}
    active = {id(v) for v in wrt if v.type.dtype.is_float}
    for op in fn.body:
        if any(id(v) in active for v in op.operands):
            active.update(id(r) for r in op.results
                          if r.type.dtype.is_float and id(r) not in stopped)
    return active


def relevant_values(fn: Function, loss: Value) -> set[int]:
    """Ids of the values `loss` depends on (itself included)."""
    relevant = {id(loss)}
    for op in reversed(fn.body):
        if any(id(r) in relevant for r in op.results):
            relevant.update(id(v) for v in op.operands)
    return relevant


def backpropagate(module: Module, fn: Function, wrt: Sequence[Value],
                  seeds: dict[Value, Value], stop: Collection[Value] = ()) -> list[Value]:
    """The vector-Jacobian product: the cotangents of `wrt` given the cotangent of each
    value of `seeds` (value -> its cotangent), built at the end of `fn.body` (the ops
    present when called are the ones differentiated). Values of `stop` pass no gradient
    (JAX's stop_gradient: treated as constants)."""
    for v in wrt:
        if not v.type.dtype.is_float:
            raise GradientError(f"cannot differentiate with respect to {v.name or '?'}: "
                                f"{v.type} is not floating-point")
    active = active_values(fn, wrt, stop)
    relevant: set[int] = set()
    for out in seeds:
        relevant |= relevant_values(fn, out)
    ctx = GradContext(Builder(module, fn))
    forward = list(fn.body)
    grads: dict[int, Value] = {id(v): g for v, g in seeds.items() if id(v) in active}
    for op in reversed(forward):
        if not any(id(r) in active and id(r) in relevant for r in op.results):
            continue
        cts = [grads.get(id(r)) for r in op.results]
        if all(ct is None for ct in cts):
            continue
        needs = [id(v) in active for v in op.operands]
        for v, g in zip(op.operands, _apply_rule(ctx, op, cts, needs), strict=True):
            if g is None or id(v) not in active:
                continue
            _check_type(op, v, g)
            prior = grads.get(id(v))
            grads[id(v)] = g if prior is None else ctx.b.add(prior, g)
    return [grads.get(id(v)) or ctx.zeros(v.type) for v in wrt]


def _apply_rule(ctx: GradContext, op: Op, cts: list[Value | None], needs: list[bool]
                ) -> Sequence[Value | None]:
    gradient = gradient_of(op.opdef)
    if gradient is None:
        raise GradientError(f"op '{op.opcode}' has no gradient rule, and it lies on a "
                            f"differentiable path to the loss")
    rule, multi = gradient.rule, gradient.multi_result
    if len(op.results) != 1 and not multi:
        raise GradientError(f"op '{op.opcode}' has {len(op.results)} results; gradients of "
                            "multi-result ops are not supported")
    ctx.set_needs(needs)
    try:
        grads = rule(ctx, op, cts if multi else cts[0])  # type: ignore[arg-type]
    except ValueError as exc:
        raise GradientError(f"op '{op.opcode}': {exc}") from None
    if len(grads) != len(op.operands):
        raise AssertionError(f"gradient rule of {op.opcode} returned {len(grads)} values "
                             f"for {len(op.operands)} operands")
    return grads


def _check_type(op: Op, v: Value, g: Value) -> None:
    if g.type != v.type:
        raise AssertionError(f"gradient rule of {op.opcode} gave {g.type} for an operand of "
                             f"type {v.type}")


