"""Op definitions: each core op is defined once, here registered by name.

An `OpDef` states the op's attributes (kind, default), how many operands it takes, its
type rule (operand types + attributes -> result types) and an optional extra verifier. The
type rule raises `TypeRuleError` with a message saying what was expected and what was found.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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


TypeRule = Callable[[list[TensorType], Mapping[str, AttrValue], "Module | None"], list[TensorType]]


@dataclass(frozen=True)
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


OP_DEFS: dict[str, OpDef] = {}


def define(opdef: OpDef) -> OpDef:
    """Register `opdef`; each op name is defined once."""
    if opdef.name in OP_DEFS:
        raise ValueError(f"op {opdef.name} defined twice")
    OP_DEFS[opdef.name] = opdef
    return opdef


def get_opdef(name: str) -> OpDef:
    """The definition of op `name`; KeyError naming it if there is none."""
    from nxcc.ir import ops  # noqa: F401  (registers the core ops on first use)

    try:
        return OP_DEFS[name]
    except KeyError:
        raise KeyError(f"unknown op '{name}'") from None
