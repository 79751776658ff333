"""The cursor over HLO text (errors, whitespace, tokens) and the grammar of shapes.

    shape  := TYPE '[' [INT (',' INT)*] ']' ['{' layout '}'] | '(' [shape (',' shape)*] ')'
    layout := [INT (',' INT)*] [':' text]

`parser.Parser` extends `ShapeParser` with the rest of the module grammar.
"""

from __future__ import annotations

import re

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.dtypes import HLO_TYPES, ir_dtype
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.nodes import ArrayShape, Shape, TupleShape
from nxcc.ir.limits import oversize

_WS = re.compile(r"(?:\s+|/\*.*?\*/|//[^\n]*)*", re.S)
_HWS = re.compile(r"(?:[ \t\r]+|/\*.*?\*/)*", re.S)
_DTYPE = re.compile(r"[a-z][a-z0-9]*")
_INT = re.compile(r"-?\d+")
MAX_TUPLE_DEPTH = 64
"""Tuple shapes nest at most this deep (XLA's own programs nest a few levels)."""


class ShapeParser:
    """A position in one text, and the shapes read there (array shapes cached by text)."""

    def __init__(self, source: Source) -> None:
        self.src = source
        self.text = source.text
        self.pos = 0
        self.shapes: dict[object, ArrayShape] = {}

    # -- errors and whitespace ---------------------------------------------------------
    def fail(self, expected: str, pos: int | None = None, code: str = E.SYNTAX) -> HloError:
        pos = self.pos if pos is None else pos
        pos = _HWS.match(self.text, pos).end()  # type: ignore[union-attr]
        return HloError(f"expected {expected}, found {self.found(pos)}", self.src, pos, code)

    def found(self, pos: int) -> str:
        text = self.text
        if pos >= len(text):
            return "the end of the text"
        if text[pos] in "\r\n":
            return "the end of the line"
        m = re.compile(r"%?[\w.\-]+|\S").match(text, pos)
        tok = m.group(0) if m else text[pos]
        return repr(tok if len(tok) <= 30 else tok[:30] + "...")

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def hws(self) -> None:
        self.pos = _HWS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def eat(self, s: str) -> bool:
        if self.text.startswith(s, self.pos):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str) -> None:
        if not self.eat(s):
            raise self.fail(what)

    # -- shapes ------------------------------------------------------------------------
    def array_shape_fast(self, dtype: str, dims: str, layout: str | None, at: int
                         ) -> ArrayShape:
        shape = ArrayShape(
            dtype,
            tuple(int(d) for d in dims.split(",")) if dims else (),
            tuple(int(d) for d in layout[1:-1].split(",")) if layout and layout != "{}"
            else (() if layout else None),
        )
        self.check_size(dtype, shape.dims, at)
        if shape.layout and sorted(shape.layout) != list(range(len(shape.dims))):
            raise HloError(f"expected a layout that permutes the {len(shape.dims)} dimensions, "
                           f"found {layout}", self.src, at, E.SEMANTIC)
        self.shapes[(dtype, dims, layout)] = shape
        return shape

    def check_size(self, dtype: str, dims: tuple[int, ...], at: int) -> None:
        """HloError (NCC_EFRM002) for a shape over the IR's size limits (`ir.limits`),
        before anything of that shape is built."""
        ir = ir_dtype(dtype)
        problem = oversize(dims, ir.itemsize if ir is not None else 16)
        if problem is not None:
            raise HloError(f"{dtype}{list(dims)}: {problem}", self.src, at, E.SEMANTIC)

    def shape(self, depth: int = 0) -> Shape:
        """A tuple shape ``(s, ...)`` (nested at most MAX_TUPLE_DEPTH deep) or an array
        shape ``T[d, ...]{layout}`` (within `ir.limits`)."""
        if self.eat("("):
            return self.tuple_shape(depth)
        at = self.pos
        dtype = self.element_type()
        dims = self.dimensions(dtype)
        self.check_size(dtype, tuple(dims), at)
        if self.text.startswith("{", self.pos):
            layout, extra = self.layout(len(dims))
            return ArrayShape(dtype, tuple(dims), layout, extra)
        return ArrayShape(dtype, tuple(dims), None, "")

    def tuple_shape(self, depth: int = 0) -> TupleShape:
        """The element shapes of a tuple shape up to its ')', after the '(' (`depth`
        tuples deep)."""
        if depth >= MAX_TUPLE_DEPTH:
            raise self.fail(f"a shape: tuples nest at most {MAX_TUPLE_DEPTH} deep")
        elements: list[Shape] = []
        self.ws()
        if not self.eat(")"):
            while True:
                self.ws()
                elements.append(self.shape(depth + 1))
                self.ws()
                if self.eat(")"):
                    break
                self.expect(",", "',' or ')' in a tuple shape")
        return TupleShape(tuple(elements))

    def element_type(self) -> str:
        """An element type name and the '[' after it."""
        text = self.text
        m = _DTYPE.match(text, self.pos)
        if m is None:
            raise self.fail("a shape such as f32[2,3] or (f32[], s32[])")
        dtype = m.group(0)
        if dtype not in HLO_TYPES or not text.startswith("[", m.end()):
            if dtype in HLO_TYPES:
                self.pos = m.end()
                raise self.fail(f"'[' after the element type '{dtype}'")
            raise self.fail("an element type (pred, s8..s64, u8..u64, f16, bf16, f32, f64)")
        self.pos = m.end() + 1
        return dtype

    def dimensions(self, dtype: str) -> list[int]:
        """Static dimension sizes up to the ']' of an array shape of element type `dtype`."""
        text = self.text
        dims: list[int] = []
        self.hws()
        if not self.eat("]"):
            while True:
                self.hws()
                if text.startswith("<=", self.pos) or text.startswith("?", self.pos):
                    raise HloError("expected a static dimension size, found a dynamic one "
                                   "(dynamic shapes are not supported)", self.src, self.pos,
                                   E.DYNAMIC)
                im = _INT.match(text, self.pos)
                if im is None or im.group(0).startswith("-"):
                    raise self.fail(f"a dimension size in the shape of element type {dtype}")
                dims.append(int(im.group(0)))
                self.pos = im.end()
                self.hws()
                if self.eat("]"):
                    break
                self.expect(",", "',' or ']' in the dimensions")
        return dims

    def layout(self, rank: int) -> tuple[tuple[int, ...], str]:
        """A ``{minor-to-major:extra}`` layout of an array of `rank` dimensions: the dimension
        order (empty, or a permutation of the dimensions) and the text after ':'."""
        layout_at = self.pos
        self.pos += 1
        layout = self.minor_to_major()
        extra = self.layout_extra() if self.eat(":") else ""
        self.expect("}", "',' or '}' in the layout")
        if sorted(layout) != list(range(rank)) and layout:
            raise HloError(f"expected a layout that permutes the {rank} dimensions, "
                           f"found {{{','.join(map(str, layout))}}}", self.src,
                           layout_at, E.SEMANTIC)
        return layout, extra

    def minor_to_major(self) -> tuple[int, ...]:
        """The comma-separated dimension numbers that open a layout (maybe none)."""
        text = self.text
        minor: list[int] = []
        while True:
            self.hws()
            im = _INT.match(text, self.pos)
            if im is None:
                break
            minor.append(int(im.group(0)))
            self.pos = im.end()
            self.hws()
            if not self.eat(","):
                break
        return tuple(minor)

    def layout_extra(self) -> str:
        """The text after a layout's ':' (tiles, memory space...), kept verbatim, up to '}'."""
        close = self.text.find("}", self.pos)
        nl = self.text.find("\n", self.pos)
        if close < 0 or 0 <= nl < close:
            raise self.fail("'}' to close the layout")
        extra = self.text[self.pos:close].strip()
        self.pos = close
        return extra
