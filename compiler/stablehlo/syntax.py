"""The MLIR syntax tree the StableHLO parser builds: module, functions, ops, regions and
attribute values. Types are `compiler.hlo.nodes` shapes (`ArrayShape` with HLO element type
names, `TupleShape`), so the conversion to HLO needs no second type system. Every node keeps
the character offset where the text says it, for errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.compiler.hlo.nodes import Shape


@dataclass(frozen=True, slots=True)
class Sym:
    """`@name`: a reference to a function or a mesh."""

    name: str


@dataclass(frozen=True, slots=True)
class Word:
    """A bare keyword: `GT`, `FLOAT`, `DEFAULT`, a unit attribute."""

    text: str


@dataclass(frozen=True, slots=True)
class DenseAttr:
    """`dense<...>`: the text between the angle brackets, its element type when written
    after it (`: tensor<2x2xi64>`), and where it starts."""

    body: str
    offset: int
    type: Shape | None = None


@dataclass(frozen=True, slots=True)
class HashAttr:
    """`#dialect.name<body>` or `#dialect<body>`: `name` is what precedes '<' (without '#')."""

    name: str
    body: str
    offset: int


@dataclass(frozen=True, slots=True)
class Chain:
    """`[a] x [b]` (dot dimensions) or `[b, 0, f]x[0, i, o]->[b, 0, f]` (convolution):
    the lists joined by 'x', then the list after '->' (None when absent)."""

    parts: tuple[tuple, ...]
    arrow: tuple | None = None


@dataclass(frozen=True, slots=True)
class FunctionType:
    """`(t, ...) -> (t, ...)` as an attribute value (a generic func.func's type)."""

    inputs: tuple[Shape, ...]
    results: tuple[Shape, ...]


@dataclass(slots=True)
class Block:
    """A block: its arguments (name with '%', type) and ops in order."""

    args: list[tuple[str, Shape]]
    ops: list[Op]
    offset: int


@dataclass(slots=True)
class Op:
    """One operation in either printed form.

    `results` are the names uses refer to (``%0``; ``%1#0``, ``%1#1`` for ``%1:2 = ...``;
    ``%a``, ``%b`` for ``%a, %b = ...``). `operands` are value references as written.
    `attrs` merges properties (``<{...}>``), the attribute dictionary (``{...}``) and the
    pretty form's ``key = value`` items; `words` are the pretty form's bare keywords in
    order; `callee` a ``@symbol`` operand; `inits` the ``init:`` operands of a pretty
    reduce; `bindings` the region argument names of a pretty while; `index` a bracketed
    list after an operand (slice ranges, a tuple index); `dense` a pretty constant's value.
    """

    name: str
    offset: int
    results: list[str] = field(default_factory=list)
    operands: list[str] = field(default_factory=list)
    operand_offsets: list[int] = field(default_factory=list)
    attrs: dict[str, object] = field(default_factory=dict)
    attr_offsets: dict[str, int] = field(default_factory=dict)
    words: list[str] = field(default_factory=list)
    callee: str | None = None
    inits: list[str] = field(default_factory=list)
    bindings: list[str] = field(default_factory=list)
    index: list | None = None
    dense: DenseAttr | None = None
    regions: list[list[Block]] = field(default_factory=list)
    in_types: list[Shape] | None = None
    out_types: list[Shape] = field(default_factory=list)
    generic: bool = False


@dataclass(slots=True)
class Func:
    """`func.func`: name, visibility, arguments (name, type, attributes), result types
    with their attributes, the body (None for a declaration)."""

    name: str
    visibility: str
    args: list[tuple[str, Shape, dict[str, object]]]
    results: list[tuple[Shape, dict[str, object]]]
    body: Block | None
    offset: int


@dataclass(slots=True)
class MlirModule:
    """A parsed module: its name and attributes, functions in text order, Shardy meshes
    (name -> axes (name, size) in order)."""

    name: str
    attrs: dict[str, object]
    funcs: list[Func]
    meshes: dict[str, tuple[tuple[str, int], ...]]
    offset: int = 0
