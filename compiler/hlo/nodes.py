"""The HLO syntax tree the parser builds: module, computations, instructions, shapes.

Nodes keep character offsets into the source (`Source.line_col` turns them into positions)
so that later stages report errors where the text says the thing. Attribute values are
typed by `compiler.hlo.attributes` (an attribute the compiler does not know stays `Opaque`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import numpy as np

from nxcc.compiler.hlo.errors import Source


@dataclass(frozen=True, slots=True)
class ArrayShape:
    """`dtype[d0,d1,...]{layout}`: `layout` is minor-to-major (None when not written);
    `layout_extra` keeps what follows ':' in the layout (tiles, memory space) as text."""

    dtype: str
    dims: tuple[int, ...]
    layout: tuple[int, ...] | None = None
    layout_extra: str = ""

    is_tuple = False

    def __str__(self) -> str:
        return f"{self.dtype}[{','.join(map(str, self.dims))}]"

    def leaves(self) -> list[ArrayShape]:
        return [self]


@dataclass(frozen=True, slots=True)
class TupleShape:
    """`(shape, shape, ...)`, possibly nested or empty."""

    elements: tuple[Shape, ...]

    is_tuple = True

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"

    def leaves(self) -> list[ArrayShape]:
        """The array shapes of the tuple, depth first (the flattened order)."""
        out: list[ArrayShape] = []
        for e in self.elements:
            out.extend(e.leaves())
        return out


Shape = Union[ArrayShape, TupleShape]  # noqa: UP007  (a runtime alias)


@dataclass(frozen=True, slots=True)
class Opaque:
    """An attribute value the compiler does not interpret, kept as its text."""

    text: str


@dataclass(slots=True)
class Attribute:
    """`name=value` after an instruction: the typed `value`, its `raw` text and offset."""

    name: str
    value: object
    raw: str
    offset: int


@dataclass(slots=True)
class Instruction:
    """One instruction. `operands` are the names used (without '%'); `operand_shapes` the
    shapes written before them (None where not written, or None for the whole list when
    none is). A constant has its `literal` (None when elided as ``{...}``); a parameter its
    `parameter_number`."""

    name: str
    shape: Shape
    opcode: str
    operands: list[str]
    attrs: dict[str, Attribute]
    root: bool = False
    offset: int = 0
    opcode_offset: int = 0
    operands_offset: int = 0
    operand_shapes: list[Shape | None] | None = None
    literal: np.ndarray | tuple | None = None
    literal_elided: bool = False
    parameter_number: int | None = None

    def attr(self, name: str, default: object = None) -> object:
        a = self.attrs.get(name)
        return default if a is None else a.value


@dataclass(slots=True)
class Computation:
    """A named computation; `params` is the written signature (None when omitted)."""

    name: str
    instructions: list[Instruction]
    is_entry: bool = False
    params: list[tuple[str, Shape]] | None = None
    result: Shape | None = None
    offset: int = 0
    attrs: dict[str, Attribute] = field(default_factory=dict)

    @property
    def root(self) -> Instruction:
        """The ROOT instruction, else the last one (as XLA does)."""
        for instr in self.instructions:
            if instr.root:
                return instr
        return self.instructions[-1]


@dataclass(slots=True)
class HloModule:
    """A parsed module: header attributes, computations in text order, the entry, and the
    FileNames / FunctionNames / FileLocations / StackFrames tables (id -> entry)."""

    name: str
    attrs: dict[str, Attribute]
    computations: list[Computation]
    entry: Computation
    tables: dict[str, dict[int, object]]
    source: Source
    offset: int = 0

    def computation(self, name: str) -> Computation | None:
        for c in self.computations:
            if c.name == name:
                return c
        return None
