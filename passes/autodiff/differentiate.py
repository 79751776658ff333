"""differentiate: append the reverse-mode gradient of a scalar loss to a function.

`differentiate(module, fn, wrt, loss)` walks the ops of `fn` that lie on a differentiable
path from a value of `wrt` to `loss`, last to first, applying each op's gradient rule
(`registry`), and appends the backward program to `fn.body` as ordinary core ops. It returns
the gradient of `loss` for each value of `wrt` (a zero constant for one the loss does not
depend on). A value is differentiable when it has a floating-point type; an op on a
differentiable path whose op has no rule is a `GradientError` naming it, never a silent
zero. Nothing is removed: the forward ops stay, and the usual passes (fold, CSE, DCE,
sharding) clean up and place the result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.passes.autodiff import rules  # noqa: F401  (registers the gradient rules)
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import rule_for


class GradientError(ValueError):
    """The function cannot be differentiated as asked (the message names the op or value)."""


def active_values(fn: Function, wrt: Sequence[Value]) -> set[int]:
    """Ids of the floating-point values of `fn` that depend on a value of `wrt`."""
    active = {id(v) for v in wrt if v.type.dtype.is_float}
    for op in fn.body:
        if any(id(v) in active for v in op.operands):
            active.update(id(r) for r in op.results if r.type.dtype.is_float)
    return active


def relevant_values(fn: Function, loss: Value) -> set[int]:
    """Ids of the values `loss` depends on (itself included)."""
    relevant = {id(loss)}
    for op in reversed(fn.body):
        if any(id(r) in relevant for r in op.results):
            relevant.update(id(v) for v in op.operands)
    return relevant


def differentiable_params(fn: Function, loss: Value, candidates: Sequence[Value]) -> list[Value]:
    """The values of `candidates` that `loss` depends on through a differentiable path (a
    chain of floating-point values: a mask used only as a select condition or compared,
    or an index, is not)."""
    relevant = relevant_values(fn, loss)
    return [v for v in candidates
            if v.type.dtype.is_float and id(loss) in active_values(fn, [v])
            and id(v) in relevant]


def differentiate(module: Module, fn: Function, wrt: Sequence[Value], loss: Value
                  ) -> list[Value]:
    """The gradients of scalar `loss` for `wrt`, built at the end of `fn.body`."""
    if loss.type.rank != 0 or not loss.type.dtype.is_float:
        raise GradientError(f"the loss must be a floating-point scalar, got {loss.type}")
    for v in wrt:
        if not v.type.dtype.is_float:
            raise GradientError(f"cannot differentiate with respect to {v.name or '?'}: "
                                f"{v.type} is not floating-point")
    active = active_values(fn, wrt)
    relevant = relevant_values(fn, loss)
    b = Builder(module, fn)
    ctx = GradContext(b)
    forward = list(fn.body)
    grads: dict[int, Value] = {}
    if id(loss) in active:
        grads[id(loss)] = ctx.full(1.0, loss.type)
    for op in reversed(forward):
        cts = [grads.get(id(r)) for r in op.results]
        if not any(id(r) in active and id(r) in relevant for r in op.results):
            continue
        if all(ct is None for ct in cts):
            continue
        needs = [id(v) in active for v in op.operands]
        for v, g in zip(op.operands, _apply_rule(ctx, op, cts, needs), strict=True):
            if g is None or id(v) not in active:
                continue
            _check_type(op, v, g)
            prior = grads.get(id(v))
            grads[id(v)] = g if prior is None else b.add(prior, g)
    return [grads.get(id(v)) or ctx.zeros(v.type) for v in wrt]


def _apply_rule(ctx: GradContext, op: Op, cts: list[Value | None], needs: list[bool]
                ) -> Sequence[Value | None]:
    rule = rule_for(op.opcode)
    if rule is None:
        raise GradientError(f"op '{op.opcode}' has no gradient rule, and it lies on a "
                            f"differentiable path to the loss")
    if len(op.results) != 1:
        raise GradientError(f"op '{op.opcode}' has {len(op.results)} results; gradients of "
                            "multi-result ops are not supported")
    ctx.set_needs(needs)
    try:
        grads = rule(ctx, op, cts[0])  # type: ignore[arg-type]
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


@dataclass(frozen=True)
class Differentiate:
    """The pass form: the entry function returns, after its results, the gradient of its
    result `loss` (an index) for each parameter named in `wrt`, named ``grad.NAME``."""

    name: ClassVar[str] = "differentiate"
    wrt: tuple[str, ...] = field(default_factory=tuple)
    loss: int = 0

    def run(self, module: Module) -> bool:
        fn = module.entry_function
        params = {p.name: p for p in fn.params}
        missing = [n for n in self.wrt if n not in params]
        if missing:
            raise GradientError(f"no parameter named {missing[0]!r}")
        wrt = [params[n] for n in self.wrt]
        grads = differentiate(module, fn, wrt, fn.results[self.loss])
        names = fn.result_names or [f"output{i}" for i in range(len(fn.results))]
        fn.results = [*fn.results, *grads]
        fn.result_names = [*names, *(f"grad.{n}" for n in self.wrt)]
        return True
