"""HLO text -> `HloModule` syntax tree: the hand-written engine (the default).

The grammar is `hlo.lark` (read by `lark_engine`, which builds the same tree); this engine
is its fast equivalent, for modules of hundreds of thousands of instructions. Each
instruction is tried first with one regular expression for the common form (array shape
without tiles, operands without shapes, no comments); anything else, and every error, goes
through the step-by-step path, which says what it expected and what it found.

    module      := 'HloModule' NAME (',' attr)* table* computation+
    table       := ('FileNames'|'FunctionNames'|'FileLocations'|'StackFrames') (INT value)*
    computation := ['ENTRY'] NAME ['(' [NAME ':' shape (',' ...)*] ')'] ['->' shape]
                   '{' instruction* '}' (',' attr)*
    instruction := ['ROOT'] NAME '=' shape OPCODE '(' operands ')' (',' attr)*  <end of line>
    operands    := [[shape] NAME (',' [shape] NAME)*] | literal (constant) | INT (parameter)
    shape       := TYPE '[' [INT (',' INT)*] ']' ['{' layout '}'] | '(' [shape (',' shape)*] ')'
    attr        := NAME '=' value          (value: see `scanning.scan_value`)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.attributes import parse_attribute, parse_key_values
from nxcc.compiler.hlo.dtypes import HLO_TYPES, IR_TYPES
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.literals import is_elided, parse_literal
from nxcc.compiler.hlo.nodes import (
    Attribute,
    Computation,
    HloModule,
    Instruction,
    Shape,
)
from nxcc.compiler.hlo.scanning import scan_value
from nxcc.compiler.hlo.shape_parser import ShapeParser
from nxcc.ir.sharding_notation.cursor import PieceError, unquote

_T = TypeVar("_T")
_NAME = re.compile(r"%?([A-Za-z_$][\w.\-$]*)")
_OPCODE = re.compile(r"[a-z][a-z0-9\-]*")
_INT = re.compile(r"-?\d+")
_KEYWORD_ENTRY = re.compile(r"ENTRY\b")
_KEYWORD_ROOT = re.compile(r"ROOT\b")
_TABLE = re.compile(r"(FileNames|FunctionNames|FileLocations|StackFrames)[ \t]*(?=\r?\n|\Z)")
_TABLE_ROW = re.compile(r"\s*(\d+)[ \t]+")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_INSTR_FAST = re.compile(
    r"(ROOT[ \t]+)?%?([A-Za-z_$][\w.\-$]*)[ \t]*=[ \t]*([a-z][a-z0-9]*)\[((?:\d+(?:,\d+)*)?)\]"
    r"(\{(?:\d+(?:,\d+)*)?\})?[ \t]+([a-z][a-z0-9\-]*)\(")
_OPERANDS_FAST = re.compile(
    r"[ \t]*((?:%?[A-Za-z_$][\w.\-$]*[ \t]*,[ \t]*)*%?[A-Za-z_$][\w.\-$]*)?[ \t]*\)")
_PARAM_FAST = re.compile(r"[ \t]*(\d+)[ \t]*\)")
_LITERAL_FAST = re.compile(r"([^()\n]*)\)")
_ATTR_FAST = re.compile(r"[ \t]*,\s*([A-Za-z_][\w.\-]*)=")
_END = re.compile(r"[ \t\r]*(?:/\*.*?\*/[ \t\r]*)*(?://[^\n]*)?(?=\n|\Z|\})")
_LOOKS_LIKE_SHAPE = re.compile(r"\(|[a-z][a-z0-9]*\[")


def parse_hlo(text: str, source: str = "<hlo>") -> HloModule:
    """The syntax tree of HLO module `text`; HloError naming `source`, line and column."""
    return Parser(Source(text, source)).module()


def assemble_module(name: str, attrs: dict[str, Attribute], computations: list[Computation],
                    tables: dict[str, dict[int, object]], src: Source, offset: int
                    ) -> HloModule:
    """The module of these parts: one ENTRY (else the last computation, as XLA does) and
    distinct computation names. Shared by both parser engines."""
    entries = [c for c in computations if c.is_entry]
    if len(entries) > 1:
        raise HloError(f"expected one ENTRY computation, found a second one "
                       f"('{entries[1].name}')", src, entries[1].offset, E.SEMANTIC)
    entry = entries[0] if entries else computations[-1]
    entry.is_entry = True
    seen: set[str] = set()
    for c in computations:
        if c.name in seen:
            raise HloError(f"expected a new computation name, found '{c.name}' again",
                           src, c.offset, E.SEMANTIC)
        seen.add(c.name)
    return HloModule(name, attrs, computations, entry, tables, src, offset)


class Parser(ShapeParser):
    """One parse of one text. Shapes and attribute values are cached by their text."""

    def __init__(self, source: Source) -> None:
        super().__init__(source)
        self.attr_cache: dict[tuple[str, str], object] = {}

    def name(self, what: str) -> str:
        m = _NAME.match(self.text, self.pos)
        if m is None:
            raise self.fail(what)
        self.pos = m.end()
        return m.group(1)

    # -- module ------------------------------------------------------------------------
    def module(self) -> HloModule:
        self.ws()
        start = self.pos
        if not re.compile(r"HloModule\b").match(self.text, self.pos):
            raise self.fail("'HloModule' at the start of the module")
        self.pos += len("HloModule")
        self.hws()
        name = self.name("the module name after 'HloModule'")
        attrs = self.attributes()
        self.end_of_line("',' or the end of the line after the module header")
        computations: list[Computation] = []
        tables: dict[str, dict[int, object]] = {}
        while True:
            self.ws()
            if self.pos >= len(self.text):
                break
            m = _TABLE.match(self.text, self.pos)
            if m is not None:
                self.pos = m.end()
                tables[m.group(1)] = self.table()
                continue
            computations.append(self.computation())
        if not computations:
            raise self.fail("a computation")
        return assemble_module(name, attrs, computations, tables, self.src, start)

    def table(self) -> dict[int, object]:
        rows: dict[int, object] = {}
        while True:
            m = _TABLE_ROW.match(self.text, self.pos)
            if m is None:
                return rows
            self.pos = m.end()
            key = int(m.group(1))
            if self.text.startswith('"', self.pos):
                sm = _STRING.match(self.text, self.pos)
                if sm is None:
                    raise self.fail("a closed string")
                rows[key] = unquote(sm.group(0))
                self.pos = sm.end()
            elif self.text.startswith("{", self.pos):
                end = self.value_end(self.pos)
                rows[key] = self.piece(parse_key_values, self.text[self.pos:end], self.pos)
                self.pos = end
            else:
                raise self.fail("a string or {key=value ...} table entry")
            self.end_of_line("the end of the line after a table entry")

    def end_of_line(self, what: str) -> None:
        m = _END.match(self.text, self.pos)
        if m is None:
            raise self.fail(what)
        self.pos = m.end()

    # -- computations ------------------------------------------------------------------
    def computation(self) -> Computation:
        start = self.pos
        is_entry = _KEYWORD_ENTRY.match(self.text, self.pos) is not None
        if is_entry:
            self.pos += len("ENTRY")
            self.hws()
        name = self.name("a computation name (or a table such as FileNames)")
        self.hws()
        params = None
        if self.eat("("):
            params = []
            self.ws()
            if not self.eat(")"):
                while True:
                    self.ws()
                    pname = self.name("a parameter name in the computation signature")
                    self.ws()
                    self.expect(":", f"':' after parameter '{pname}'")
                    self.ws()
                    params.append((pname, self.shape()))
                    self.ws()
                    if self.eat(")"):
                        break
                    self.expect(",", "',' or ')' in the computation signature")
            self.hws()
        result = None
        if self.eat("->"):
            self.hws()
            result = self.shape()
            self.hws()
        self.expect("{", f"'{{' to start the body of computation '{name}'")
        instructions: list[Instruction] = []
        while True:
            self.ws()
            if self.eat("}"):
                break
            if self.pos >= len(self.text):
                raise self.fail(f"'}}' to close computation '{name}'")
            instructions.append(self.instruction())
        if not instructions:
            raise HloError(f"expected at least one instruction in computation '{name}'",
                           self.src, start, E.SEMANTIC)
        attrs = self.attributes()
        self.end_of_line("the end of the line after the computation")
        return Computation(name, instructions, is_entry, params, result, start, attrs)

    # -- instructions ------------------------------------------------------------------
    def instruction(self) -> Instruction:
        text = self.text
        start = self.pos
        m = _INSTR_FAST.match(text, start)
        shape: Shape | None = None
        if m is not None:
            key = m.group(3, 4, 5)
            shape = self.shapes.get(key)
            if shape is None and m.group(3) in HLO_TYPES:
                shape = self.array_shape_fast(m.group(3), m.group(4), m.group(5), m.start(5))
        if m is not None and shape is not None:
            root = m.group(1) is not None
            name = m.group(2)
            opcode = m.group(6)
            opcode_at = m.start(6)
            self.pos = m.end()
        else:
            root = _KEYWORD_ROOT.match(text, start) is not None
            if root:
                self.pos += 4
                self.hws()
            name = self.name("an instruction name, or '}' to close the computation")
            self.hws()
            self.expect("=", f"'=' after the instruction name '{name}'")
            self.hws()
            shape = self.shape()
            self.hws()
            opcode_at = self.pos
            om = _OPCODE.match(text, self.pos)
            if om is None:
                raise self.fail("an opcode")
            opcode = om.group(0)
            self.pos = om.end()
            self.expect("(", f"'(' after the opcode '{opcode}'")
        instr = Instruction(name, shape, opcode, [], {}, root, start, opcode_at, self.pos)
        if opcode == "parameter":
            self.parameter_number(instr)
        elif opcode == "constant":
            self.literal(instr)
        else:
            om = _OPERANDS_FAST.match(text, self.pos)
            if om is not None:
                g = om.group(1)
                if g:
                    instr.operands = [x.strip().lstrip("%") for x in g.split(",")]
                self.pos = om.end()
            else:
                self.operands(instr)
        instr.attrs = self.attributes()
        m = _END.match(text, self.pos)
        if m is None:
            self.hws()
            if self.eat(","):
                self.hws()
                raise self.fail("an attribute name followed by '='")
            raise self.fail("',' or the end of the line after the instruction")
        self.pos = m.end()
        return instr

    def parameter_number(self, instr: Instruction) -> None:
        m = _PARAM_FAST.match(self.text, self.pos)
        if m is None:
            self.ws()
            im = _INT.match(self.text, self.pos)
            if im is None:
                raise self.fail("the parameter number")
            self.pos = im.end()
            self.ws()
            self.expect(")", "')' after the parameter number")
            instr.parameter_number = int(im.group(0))
            return
        instr.parameter_number = int(m.group(1))
        self.pos = m.end()

    def literal(self, instr: Instruction) -> None:
        m = _LITERAL_FAST.match(self.text, self.pos)
        if m is not None:
            body_at, end = self.pos, m.end()
            body = m.group(1)
        else:
            body_at, depth, pos = self.pos, 1, self.pos
            while pos < len(self.text) and depth:
                c = self.text[pos]
                depth += (c == "(") - (c == ")")
                pos += 1
            if depth:
                raise self.fail("')' to close the constant", body_at - 1)
            body, end = self.text[body_at:pos - 1], pos
        if is_elided(body):
            instr.literal_elided = True
        elif all(leaf.dtype in IR_TYPES for leaf in instr.shape.leaves()):
            instr.literal = self.piece(lambda t: parse_literal(t, instr.shape), body, body_at)
        self.pos = end

    def operands(self, instr: Instruction) -> None:
        names: list[str] = []
        shapes: list[Shape | None] = []
        self.ws()
        if not self.eat(")"):
            while True:
                self.ws()
                shape = None
                if _LOOKS_LIKE_SHAPE.match(self.text, self.pos):
                    shape = self.shape()
                    self.ws()
                names.append(self.name("an operand name" if shape is not None
                                       else "an operand (a name, or a shape and a name)"))
                shapes.append(shape)
                self.ws()
                if self.eat(")"):
                    break
                if not self.eat(","):
                    raise self.fail(f"',' or ')' after operand '{names[-1]}'")
        instr.operands = names
        if any(s is not None for s in shapes):
            instr.operand_shapes = shapes

    def attributes(self) -> dict[str, Attribute]:
        attrs: dict[str, Attribute] = {}
        text = self.text
        cache = self.attr_cache
        while True:
            m = _ATTR_FAST.match(text, self.pos)
            if m is None:
                return attrs
            name = m.group(1)
            start = m.end()
            end = self.value_end(start)
            raw = text[start:end]
            key = (name, raw)
            value = cache.get(key, cache)
            if value is cache:
                value = self.piece(partial(parse_attribute, name), raw, start)
                cache[key] = value
            if name in attrs:
                raise HloError(f"expected each attribute once, found '{name}' again",
                               self.src, m.start(1), E.SEMANTIC)
            attrs[name] = Attribute(name, value, raw, start)
            self.pos = end

    def value_end(self, start: int) -> int:
        try:
            return scan_value(self.text, start)
        except PieceError as exc:
            raise HloError(exc.message, self.src, start + exc.offset) from None

    def piece(self, parse: Callable[[str], _T], text: str, offset: int) -> _T:
        """`parse(text)`, its PieceError turned into an HloError at `offset` + its offset."""
        try:
            return parse(text)
        except PieceError as exc:
            raise HloError(exc.message, self.src, offset + exc.offset) from None
        except ValueError as exc:
            raise HloError(str(exc), self.src, offset, E.SEMANTIC) from None
