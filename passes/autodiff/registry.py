"""Gradient rules, registered against the op definitions they differentiate.

A rule takes the `GradContext` (a builder appending to the function being differentiated,
and which operands need a gradient), the op and the cotangent of its (only) result, and
returns one cotangent per operand: a value of the operand's type, or None for "no
gradient" (a non-differentiable operand, or one that `ctx.needs(i)` says nobody wants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from nxcc.ir.core import Op, Value
from nxcc.ir.opdef import OpDef
from nxcc.ir.registry import OpTable

if TYPE_CHECKING:
    from nxcc.passes.autodiff.context import GradContext

GradRule = Callable[["GradContext", Op, Value], Sequence[Value | None]]
#: the rule of an op registered with `multi_result`: it takes every result's cotangent
MultiGradRule = Callable[["GradContext", Op, list[Value | None]], Sequence[Value | None]]
_Rule = TypeVar("_Rule", GradRule, MultiGradRule)


@dataclass(frozen=True)
class Gradient:
    """An op's gradient rule; `multi_result`: the rule takes the list of every result's
    cotangent (None for a result without one) instead of the one result's cotangent."""

    rule: GradRule | MultiGradRule
    multi_result: bool = False


#: op definition -> its `Gradient`; the rules register when `passes.autodiff.rules` is
#: imported (as `differentiate` does).
RULES: OpTable[Gradient] = OpTable("gradient rule")


@overload
def gradient_rule(*opdefs: OpDef, multi_result: Literal[False] = False
                  ) -> Callable[[GradRule], GradRule]: ...


@overload
def gradient_rule(*opdefs: OpDef, multi_result: Literal[True]
                  ) -> Callable[[MultiGradRule], MultiGradRule]: ...


def gradient_rule(*opdefs: OpDef, multi_result: bool = False
                  ) -> Callable[[_Rule], _Rule]:
    """Register the decorated function as the gradient rule of each op of `opdefs`
    (`multi_result`: the rule takes a list of cotangents, one per result)."""

    def register(rule: _Rule) -> _Rule:
        for opdef in opdefs:
            RULES.add(opdef, Gradient(rule, multi_result))
        return rule

    return register


def gradient_of(opdef: OpDef) -> Gradient | None:
    """The gradient rule of `opdef`, None when it has none."""
    return RULES.get(opdef)
