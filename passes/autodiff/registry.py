"""Gradient rules, registered against the op definitions they differentiate.

A rule takes the `GradContext` (a builder appending to the function being differentiated,
and which operands need a gradient), the op and the cotangent of its (only) result, and
returns one cotangent per operand: a value of the operand's type, or None for "no
gradient" (a non-differentiable operand, or one that `ctx.needs(i)` says nobody wants).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from nxcc.ir.core import Op, Value
from nxcc.ir.opdef import OpDef, get_opdef

if TYPE_CHECKING:
    from nxcc.passes.autodiff.context import GradContext

GradRule = Callable[["GradContext", Op, Value], Sequence[Value | None]]

#: id(OpDef) -> (the OpDef, its rule); keyed by identity (an OpDef holds dicts, so it
#: does not hash), the OpDef kept alive beside its rule.
RULES: dict[int, tuple[OpDef, GradRule]] = {}


#: ops whose rule takes the list of every result's cotangent (None for a result without
#: one) instead of the one result's cotangent.
MULTI_RESULT: set[str] = set()


def gradient_rule(*opcodes: str, multi_result: bool = False
                  ) -> Callable[[GradRule], GradRule]:
    """Register the decorated function as the gradient rule of each op in `opcodes`
    (`multi_result`: the rule takes a list of cotangents, one per result)."""

    def register(rule: GradRule) -> GradRule:
        for name in opcodes:
            if multi_result:
                MULTI_RESULT.add(name)
            opdef = get_opdef(name)
            if id(opdef) in RULES:
                raise ValueError(f"gradient rule of {name} registered twice")
            RULES[id(opdef)] = (opdef, rule)
        return rule

    return register


def rule_for(opcode: str) -> GradRule | None:
    """The gradient rule of op `opcode`, None when it has none (the rules register when
    `passes.autodiff.rules` is imported, as `differentiate` does)."""
    entry = RULES.get(id(get_opdef(opcode)))
    return entry[1] if entry is not None else None


def takes_all_cotangents(opcode: str) -> bool:
    """Whether the rule of `opcode` takes every result's cotangent (a multi-result op)."""
    return opcode in MULTI_RESULT
