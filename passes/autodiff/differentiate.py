"""differentiate: append the reverse-mode gradient of a scalar loss to a function.

`differentiate(module, fn, wrt, loss)` appends the backward program of `fn` (see
`backprop.backpropagate`) and returns the gradient of `loss` for each value of `wrt` (a zero
constant for one the loss does not depend on). Nothing is removed: the forward ops stay, and
the usual passes (fold, CSE, DCE, sharding) clean up and place the result.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.passes.autodiff import rules  # noqa: F401  (registers the gradient rules)
from nxcc.passes.autodiff.backprop import (
    GradientError,
    active_values,
    backpropagate,
    relevant_values,
)

__all__ = ["Differentiate", "GradientError", "differentiable_params", "differentiate"]


def differentiable_params(fn: Function, loss: Value, candidates: Sequence[Value]) -> list[Value]:
    """The values of `candidates` that `loss` depends on through a differentiable path (a
    chain of floating-point values: a mask used only as a select condition or compared,
    or an index, is not)."""
    relevant = relevant_values(fn, loss)
    return [v for v in candidates
            if v.type.dtype.is_float and id(loss) in active_values(fn, [v])
            and id(v) in relevant]


def differentiate(module: Module, fn: Function, wrt: Sequence[Value], loss: Value,
                  stop_gradients: Collection[Value] = ()) -> list[Value]:
    """The gradients of scalar `loss` for `wrt`, built at the end of `fn.body`; values of
    `stop_gradients` are treated as constants (no gradient flows through them)."""
    if loss.type.rank != 0 or not loss.type.dtype.is_float:
        raise GradientError(f"the loss must be a floating-point scalar, got {loss.type}")
    b = Builder(module, fn)
    return backpropagate(module, fn, wrt, {loss: b.splat(1.0, loss.type)}, stop_gradients)


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
