"""Op definitions: each core op is defined once, as a constant of `nxcc.ir.ops`.

An `OpDef` states the op's attributes (kind, default), how many operands it takes and its
type rule (operand types + attributes -> result types). The type rule raises
`TypeRuleError` with a message saying what was expected and what was found. Definitions are
compared by identity: every per-op table (kernels, sharding rules, FLOP counts, frontend
converters) is keyed by the definition object, and `OP_DEFS` maps the op's text name (the
name the IR text and NEFF programs use) to it.

An `ElementwiseDef` (the unary and binary arithmetic families) also carries its numpy
function and allowed element kinds: its kernel, sharding rule and FLOP count are derived
from those fields, so adding such an op touches its definition only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from nxcc.ir.attributes import AttrKind, AttrValue
from nxcc.ir.types import TensorType

if TYPE_CHECKING:
    from nxcc.ir.core import Module


class TypeRuleError(ValueError):
    """An op's operands or attributes break its type rule."""


REQUIRED = object()


@dataclass(frozen=True)
class AttrSpec:
    """One declared attribute: its kind, its default (`REQUIRED` if none), enum choices."""

    kind: AttrKind
    default: object = REQUIRED
    choices: tuple[str, ...] = ()


def attr_specs(**specs: AttrKind | AttrSpec) -> dict[str, AttrSpec]:
    """Attribute specs from keywords: a bare kind is a required attribute of that kind."""
    return {k: v if isinstance(v, AttrSpec) else AttrSpec(v) for k, v in specs.items()}


def optional(kind: AttrKind, default: object) -> AttrSpec:
    """An attribute of `kind` that defaults to `default`."""
    return AttrSpec(kind, default)


TypeRule = Callable[[list[TensorType], Mapping[str, AttrValue], "Module | None"], list[TensorType]]


@dataclass(frozen=True, eq=False)
class OpDef:
    """The definition of one core op.

    `operands` is the exact operand count, or None for variadic ops with at least
    `min_operands`. `elementwise` marks ops whose result element i depends only on operand
    elements i (the fusion and sharding passes use it). `side_effects` marks ops that act
    beyond their results (point-to-point send and receive): never folded, merged or removed.
    """

    name: str
    type_rule: TypeRule
    attrs: dict[str, AttrSpec] = field(default_factory=dict)
    operands: int | None = None
    min_operands: int = 0
    elementwise: bool = False
    side_effects: bool = False
    doc: str = ""

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def check_attrs(self, attrs: Mapping[str, object]) -> dict[str, AttrValue]:
        """The attributes completed with defaults and canonicalised; TypeRuleError if wrong."""
        out: dict[str, AttrValue] = {}
        for key in attrs:
            if key not in self.attrs:
                known = ", ".join(self.attrs) or "none"
                raise TypeRuleError(f"{self.name} has no attribute '{key}' (known: {known})")
        for key, spec in self.attrs.items():
            if key in attrs and attrs[key] is None and spec.default is None:
                out[key] = None  # type: ignore[assignment]
            elif key in attrs:
                try:
                    out[key] = spec.kind.check(attrs[key], spec.choices)
                except ValueError as exc:
                    raise TypeRuleError(f"{self.name} attribute '{key}': {exc}") from None
            elif spec.default is REQUIRED:
                raise TypeRuleError(f"{self.name} needs attribute '{key}'")
            else:
                out[key] = spec.default  # type: ignore[assignment]
        return out

    def check_operand_count(self, n: int) -> None:
        if self.operands is not None and n != self.operands:
            raise TypeRuleError(f"{self.name} takes {self.operands} operands, got {n}")
        if self.operands is None and n < self.min_operands:
            raise TypeRuleError(f"{self.name} takes at least {self.min_operands} operands, got {n}")

    def infer(
        self, operand_types: list[TensorType], attrs: Mapping[str, AttrValue], module: Module | None
    ) -> list[TensorType]:
        """Result types for these operands and (already checked) attributes."""
        self.check_operand_count(len(operand_types))
        return self.type_rule(operand_types, attrs, module)


ElementFn = Callable[..., np.ndarray]


@dataclass(frozen=True, eq=False)
class ElementwiseDef(OpDef):
    """A unary or binary elementwise op of one element type (result type = operand type).

    `kinds` are the allowed element kinds ('float', 'int', 'pred', 'signed' joined by '|');
    `fn` computes the op on whole numpy arrays of the compute dtype; `precise` evaluates
    floats in float64 and rounds once into the result (transcendental functions), except
    float32 when `float32_native`: `fn`'s own float32 loop (numpy's SIMD kernel, float32
    cost, within a few ulps; for exp, log and tanh, whose float32 bits do not depend on
    the array's layout, length or stride).
    """

    kinds: str = ""
    fn: ElementFn | None = None
    precise: bool = False
    float32_native: bool = False


D = TypeVar("D", bound=OpDef)

OP_DEFS: dict[str, OpDef] = {}


def define(opdef: D) -> D:
    """Register `opdef`; each op name is defined once."""
    if opdef.name in OP_DEFS:
        raise ValueError(f"op {opdef.name} defined twice")
    OP_DEFS[opdef.name] = opdef
    return opdef


def get_opdef(name: str) -> OpDef:
    """The definition of op `name`; KeyError naming it if there is none. (Importing the IR
    package, `nxcc.ir`, which every IR module does first, defines every op.)"""
    opdef = OP_DEFS.get(name)
    if opdef is None:
        raise KeyError(f"unknown op '{name}'")
    return opdef


def all_opdefs() -> list[OpDef]:
    """Every core op definition, in definition order."""
    return list(OP_DEFS.values())
