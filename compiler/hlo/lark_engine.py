"""HLO text -> `HloModule` through the LALR grammar `hlo.lark` (the reference engine).

Builds the same syntax tree as the hand-written engine (`parser.py`), walking lark's parse
tree directly (no Transformer): shapes, attribute values and constant literals are read
from their text spans with the same functions the fast engine uses, so the two engines
differ only in how they find the structure. It is several times slower; the fast engine
is the default and the tests check that both agree on every fixture.
"""

from __future__ import annotations

import functools
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.attributes import parse_attribute, parse_key_values
from nxcc.compiler.hlo.dtypes import IR_TYPES
from nxcc.compiler.hlo.errors import HloError, Source
from nxcc.compiler.hlo.literals import is_elided, parse_literal
from nxcc.compiler.hlo.nodes import (
    Attribute,
    Computation,
    HloModule,
    Instruction,
    Shape,
    TupleShape,
)
from nxcc.compiler.hlo.parser import Parser, assemble_module
from nxcc.ir.sharding_notation.cursor import unquote

_TERMINALS = {
    "COMMA": "','", "LPAR": "'('", "RPAR": "')'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LSQB": "'['", "RSQB": "']'", "EQUAL": "'='", "COLON": "':'", "WORD": "a name or value",
    "ARRAY_SHAPE": "a shape", "STRING": "a string", "INT": "an integer", "ENTRY": "'ENTRY'",
    "ROOT": "'ROOT'", "TABLE_NAME": "a table name", "LESSTHAN": "'<'", "MORETHAN": "'>'",
    "TRANSPOSE": "'T('", "$END": "the end of the text",
}


@functools.cache
def grammar() -> Lark:
    """The LALR parser of `hlo.lark` (built once per process)."""
    text = resources.files("nxcc.compiler.hlo").joinpath("hlo.lark").read_text()
    return Lark(text, parser="lalr", lexer="contextual", propagate_positions=True)


def parse_hlo_lark(text: str, source: str = "<hlo>") -> HloModule:
    """The syntax tree of HLO module `text`; HloError naming `source`, line and column."""
    src = Source(text, source)
    try:
        tree = grammar().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(exc, src) from None
    return _Walker(src).module(tree)


def _syntax_error(exc: UnexpectedInput, src: Source) -> HloError:
    pos = exc.pos_in_stream if exc.pos_in_stream is not None else len(src.text)
    if isinstance(exc, UnexpectedToken):
        names = sorted({_TERMINALS.get(t, t.lower()) for t in exc.expected})
        tok = exc.token
        found = "the end of the text" if tok.type == "$END" else repr(str(tok))
    elif isinstance(exc, UnexpectedCharacters):
        names = sorted({_TERMINALS.get(t, t.lower()) for t in exc.allowed or ()})
        found = repr(src.text[pos:pos + 1])
    else:
        names, found = [], "something else"
    if len(names) > 1:
        expected = ", ".join(names[:-1]) + f" or {names[-1]}"
    else:
        expected = names[0] if names else "something else"
    return HloError(f"expected {expected}, found {found}", src, pos, E.SYNTAX)



def _start(node: Tree | Token) -> int:
    """Where `node` starts, a token where the grammar puts one (a name, an opcode)."""
    if not isinstance(node, Token) or node.start_pos is None:
        raise TypeError(f"expected a token with its position, found {node!r}")
    return node.start_pos


def _end(node: Tree | Token) -> int:
    """Where the token `node` ends (see `_start`)."""
    if not isinstance(node, Token) or node.end_pos is None:
        raise TypeError(f"expected a token with its position, found {node!r}")
    return node.end_pos

class _Walker:
    def __init__(self, src: Source) -> None:
        self.src = src
        self.text = src.text
        self.helper = Parser(src)

    def module(self, tree: Tree) -> HloModule:
        children = tree.children
        name = str(children[0]).lstrip("%")
        attrs = self.attributes(children[1])
        tables: dict[str, dict[int, object]] = {}
        computations: list[Computation] = []
        for child in children[2:]:
            if child.data == "table":
                tables[str(child.children[0])] = self.table(child)
            else:
                computations.append(self.computation(child))
        offset = self.text.find("HloModule")
        return assemble_module(name, attrs, computations, tables, self.src, offset)

    def table(self, tree: Tree) -> dict[int, object]:
        rows: dict[int, object] = {}
        for row in tree.children[1:]:
            key, value = row.children
            if isinstance(value, Token):
                rows[int(str(key))] = unquote(str(value))
            else:
                text = self.span(value)
                rows[int(str(key))] = self.helper.piece(parse_key_values, text,
                                                        value.meta.start_pos)
        return rows

    def span(self, node: Tree | Token) -> str:
        if isinstance(node, Token):
            return str(node)
        return self.text[node.meta.start_pos:node.meta.end_pos]

    def attributes(self, tree: Tree) -> dict[str, Attribute]:
        out: dict[str, Attribute] = {}
        cache = self.helper.attr_cache
        for attr in tree.children:
            name_tok, value = attr.children
            name = str(name_tok)
            start = value.meta.start_pos
            raw = self.text[start:value.meta.end_pos]
            key = (name, raw)
            typed = cache.get(key, cache)
            if typed is cache:
                typed = self.helper.piece(functools.partial(parse_attribute, name), raw, start)
                cache[key] = typed
            if name in out:
                raise HloError(f"expected each attribute once, found '{name}' again",
                               self.src, _start(name_tok), E.SEMANTIC)
            out[name] = Attribute(name, typed, raw, start)
        return out

    def shape(self, node: Tree) -> Shape:
        if node.data in ("tuple_shape", "operand_tuple_shape"):
            return TupleShape(tuple(self.shape(c) for c in node.children if c is not None))
        tok = node.children[0]
        self.helper.pos = _start(tok)
        return self.helper.shape()

    def computation(self, tree: Tree) -> Computation:
        children = list(tree.children)
        is_entry = isinstance(children[0], Token) and children[0].type == "ENTRY"
        if is_entry or children[0] is None:
            children = children[1:]
        name_tok = children[0]
        params: list[tuple[str, Shape]] | None = None
        result = None
        rest = children[1:]
        if rest and rest[0] is None:
            rest = rest[1:]
        elif rest and isinstance(rest[0], Tree) and rest[0].data == "signature":
            sig = rest[0]
            if self.text[_end(name_tok):sig.meta.end_pos].lstrip().startswith("("):
                params = []
            for part in sig.children:
                if part is None:
                    continue
                if part.data == "param":
                    params.append((str(part.children[0]).lstrip("%"),  # type: ignore[union-attr]
                                   self.shape(part.children[1])))
                else:
                    result = self.shape(part)
            rest = rest[1:]
        instructions = [self.instruction(c) for c in rest[:-1]]
        attrs = self.attributes(rest[-1])
        return Computation(str(name_tok).lstrip("%"), instructions, is_entry, params, result,
                           tree.meta.start_pos, attrs)

    def instruction(self, tree: Tree) -> Instruction:
        children = list(tree.children)
        root = isinstance(children[0], Token) and children[0].type == "ROOT"
        if root or children[0] is None:
            children = children[1:]
        name_tok, shape_node, opcode_tok = children[0], children[1], children[2]
        args = [c for c in children[3:-1] if c is not None]
        opcode = str(opcode_tok)
        open_at = self.text.index("(", _end(opcode_tok)) + 1
        instr = Instruction(str(name_tok).lstrip("%"), self.shape(shape_node), opcode, [], {},
                            root, tree.meta.start_pos, _start(opcode_tok), open_at)
        if opcode == "parameter":
            self.parameter_number(instr, args, open_at)
        elif opcode == "constant":
            end = args[-1].meta.end_pos if args else open_at
            close = self.text.index(")", end)
            body = self.text[open_at:close]
            if is_elided(body):
                instr.literal_elided = True
            elif all(leaf.dtype in IR_TYPES for leaf in instr.shape.leaves()):
                instr.literal = self.helper.piece(
                    lambda t: parse_literal(t, instr.shape), body, open_at)
        else:
            shapes: list[Shape | None] = []
            for arg in args:
                shape_part, value = arg.children
                word = value.children[0] if value.data == "value" else None
                if not isinstance(word, Token) or word.type != "WORD" or \
                        word.startswith(("-", "+")) or word[0].isdigit():
                    raise HloError(f"expected an operand name, found "
                                   f"{self.span(value)[:24]!r}", self.src,
                                   value.meta.start_pos)
                instr.operands.append(str(word).lstrip("%"))
                shapes.append(self.shape(shape_part) if shape_part is not None else None)
            if any(s is not None for s in shapes):
                instr.operand_shapes = shapes
        instr.attrs = self.attributes(children[-1])
        return instr

    def parameter_number(self, instr: Instruction, args: list[Tree], at: int) -> None:
        text = self.span(args[0].children[1]) if len(args) == 1 else ""
        if not text.isdigit() or args[0].children[0] is not None:
            where = args[0].meta.start_pos if args else at
            raise HloError("expected the parameter number, found "
                           f"{self.text[where:where + 12]!r}", self.src, where)
        instr.parameter_number = int(text)
