"""What a lowering handler sees of one instruction: its operands, attributes, the builder.

A lowered HLO value is a `Tree`: an IR `Value` for an array, a tuple of trees for a tuple
(the IR has no tuple type), or `TOKEN` for XLA's token type (which carries no data).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, Union

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.dtypes import ir_dtype
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import ArrayShape, Instruction, Shape, TupleShape
from nxcc.ir.attributes import Symbol
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef, TypeRuleError
from nxcc.ir.types import TensorType

if TYPE_CHECKING:
    from nxcc.compiler.hlo.lower import ModuleLowering


class _Token:
    """The value of a token-typed instruction (ordering only, no data)."""

    def __repr__(self) -> str:
        return "TOKEN"


TOKEN = _Token()
Tree = Union[Value, tuple, _Token]  # noqa: UP007  (a runtime alias)

_MISSING = object()
_T = TypeVar("_T")


def leaves(tree: Tree) -> list[Value]:
    """The IR values of `tree`, depth first (tokens dropped)."""
    if isinstance(tree, Value):
        return [tree]
    if isinstance(tree, tuple):
        out: list[Value] = []
        for t in tree:
            out.extend(leaves(t))
        return out
    return []


def value_count(shape: Shape) -> int:
    """How many values `rebuild` takes for `shape` (its leaves that are not tokens)."""
    if isinstance(shape, TupleShape):
        return sum(value_count(e) for e in shape.elements)
    return 0 if shape.dtype == "token" else 1


def rebuild(shape: Shape, values: Sequence[Value]) -> Tree:
    """The tree of `shape` whose leaves are `values` in order (the inverse of `leaves`)."""
    it = iter(values)

    def build(s: Shape) -> Tree:
        if isinstance(s, TupleShape):
            return tuple(build(e) for e in s.elements)
        if s.dtype == "token":
            return TOKEN
        return next(it)

    return build(shape)


class InstrContext:
    """One instruction being lowered: `instr`, its operand trees `args` (and the shapes, with
    layouts, their instructions declare: `arg_shapes`), the builder `b`."""

    __slots__ = ("instr", "args", "arg_shapes", "b", "lowering")

    def __init__(self, instr: Instruction, args: list[Tree], b: Builder,
                 lowering: ModuleLowering, arg_shapes: list[Shape] | None = None) -> None:
        self.instr = instr
        self.args = args
        self.arg_shapes = arg_shapes or []
        self.b = b
        self.lowering = lowering

    # -- errors ------------------------------------------------------------------------
    def error(self, message: str, code: str = E.SEMANTIC, at: int | None = None) -> HloError:
        """An error about this instruction, at its opcode (or at offset `at`)."""
        where = self.instr.opcode_offset if at is None else at
        return HloError(message, self.lowering.source, where, code)

    def attr_error(self, name: str, message: str, code: str = E.SEMANTIC) -> HloError:
        """An error about attribute `name`, at its value."""
        a = self.instr.attrs.get(name)
        return self.error(message, code, at=a.offset if a is not None else None)

    # -- operands ----------------------------------------------------------------------
    def value(self, i: int) -> Value:
        """Operand `i` as one array value."""
        if i >= len(self.args):
            raise self.error(f"expected at least {i + 1} operands for {self.instr.opcode}, "
                             f"found {len(self.args)}")
        v = self.args[i]
        if not isinstance(v, Value):
            raise self.error(f"expected operand {i} of {self.instr.opcode} to be an array, "
                             "found a tuple or token", at=self.instr.operands_offset)
        return v

    def values(self) -> list[Value]:
        return [self.value(i) for i in range(len(self.args))]

    def operand_count(self, *allowed: int) -> None:
        if len(self.args) not in allowed:
            want = " or ".join(map(str, allowed))
            raise self.error(f"expected {want} operands for {self.instr.opcode}, found "
                             f"{len(self.args)}", at=self.instr.operands_offset)

    # -- attributes --------------------------------------------------------------------
    def attr(self, name: str, default: object = _MISSING) -> object:
        a = self.instr.attrs.get(name)
        if a is not None:
            return a.value
        if default is _MISSING:
            raise self.error(f"expected attribute '{name}' on {self.instr.opcode}, found none",
                             at=self.instr.operands_offset)
        return default

    def attr_as(self, name: str, kind: type[_T], default: object = _MISSING) -> _T:
        """`attr(name, default)`, which the attribute's parser (by its name) makes a `kind`;
        an error naming the attribute if it is not one."""
        value = self.attr(name, default)
        if not isinstance(value, kind):
            raise self.attr_error(name, f"expected a value of type {kind.__name__}, found "
                                        f"{value!r}")
        return value

    # -- types -------------------------------------------------------------------------
    def ir_type(self, shape: Shape | None = None) -> TensorType:
        """The IR type of `shape` (default: this instruction's), which must be an array."""
        shape = self.instr.shape if shape is None else shape
        if not isinstance(shape, ArrayShape):
            raise self.error(f"expected an array shape for {self.instr.opcode}, found {shape}",
                             at=self.instr.offset)
        return TensorType(self.dtype(shape.dtype), shape.dims)

    def dtype(self, name: str) -> DType:
        dt = ir_dtype(name)
        if dt is None:
            raise self.error(f"expected a supported element type (pred, s8..s64, u8..u64, "
                             f"f16, bf16, f32, f64), found {name}", E.UNSUPPORTED_DTYPE,
                             at=self.instr.offset)
        return dt

    @property
    def out_type(self) -> TensorType:
        return self.ir_type()

    # -- building ----------------------------------------------------------------------
    def emit(self, opcode: OpDef | str, operands: Sequence[Value],
             attrs: Mapping[str, object] | None = None) -> list[Value]:
        """Append IR op `opcode`; its type-rule error becomes an error at this instruction."""
        try:
            return self.b.ops(opcode, operands, attrs)
        except TypeRuleError as exc:
            raise self.error(f"{self.instr.opcode} '{self.instr.name}': {exc}") from None

    def emit1(self, opcode: OpDef | str, operands: Sequence[Value],
              attrs: Mapping[str, object] | None = None) -> Value:
        return self.emit(opcode, operands, attrs)[0]

    def computation(self, attr: str) -> Symbol:
        """The IR function lowered from the computation attribute `attr` names."""
        name = self.attr(attr)
        if isinstance(name, tuple):
            if len(name) != 1:
                raise self.attr_error(attr, f"expected one computation in '{attr}', found "
                                      f"{len(name)}")
            name = name[0]
        return self.lowering.function_for(str(name), self, attr)

    def hlo_computation(self, attr: str, name: str | None = None):
        """The HLO computation named by attribute `attr` (or `name`)."""
        if name is None:
            name = self.attr(attr)  # type: ignore[assignment]
            if isinstance(name, tuple):
                name = name[0]
        comp = self.lowering.computations.get(str(name))
        if comp is None:
            raise self.attr_error(attr, f"expected a computation of the module for '{attr}', "
                                  f"found '{name}'")
        return comp
