"""Reading tokens: position, expectations, errors, types and attribute values.

`Reader` walks a `TokenList`; `Parser` (parser.py) adds the ops, regions and functions.
Every error is an `HloError` at the offending token: ``FILE:LINE:COL: expected ..., found
...``, the source line and a caret.
"""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError, describe
from nxcc.compiler.hlo.nodes import Shape, TupleShape
from nxcc.compiler.hlo.shape_parser import MAX_TUPLE_DEPTH
from nxcc.compiler.stablehlo.lexer import TokenList
from nxcc.compiler.stablehlo.syntax import Chain, DenseAttr, FunctionType, HashAttr, Sym, Word
from nxcc.compiler.stablehlo.types import ELEMENT_TYPES, parse_type
from nxcc.ir.sharding_notation.cursor import PieceError, unquote


class Reader:
    """A position in a token list, and the readers of types and attribute values."""

    def __init__(self, tokens: TokenList) -> None:
        self.tokens = tokens
        self.kinds = tokens.kinds
        self.texts = tokens.texts
        self.starts = tokens.starts
        self.source = tokens.source
        self.i = 0

    # -- position ----------------------------------------------------------------------
    def kind(self, ahead: int = 0) -> str:
        """The kind of the token `ahead` places on (the list ends in several 'EOF's)."""
        return self.kinds[self.i + ahead]

    def text(self, ahead: int = 0) -> str:
        return self.texts[self.i + ahead]

    def at(self, text: str) -> bool:
        return self.texts[self.i] == text and self.kinds[self.i] != "STRING"

    def eat(self, text: str) -> bool:
        if self.texts[self.i] == text and self.kinds[self.i] != "STRING":
            self.i += 1
            return True
        return False

    def offset(self) -> int:
        return self.starts[self.i]

    def error(self, expected: str, code: str = E.SYNTAX, at: int | None = None) -> HloError:
        i = self.i if at is None else at
        found = describe(self.source.text[self.starts[i]:]) if self.kinds[i] != "EOF" \
            else "the end of the text"
        return HloError(f"expected {expected}, found {found}", self.source, self.starts[i],
                        code)

    def expect(self, text: str, what: str | None = None) -> int:
        if not self.eat(text):
            raise self.error(what or f"'{text}'")
        return self.starts[self.i - 1]

    def take(self, kind: str, what: str) -> str:
        if self.kinds[self.i] != kind:
            raise self.error(what)
        self.i += 1
        return self.texts[self.i - 1]

    def skip_balanced(self) -> None:
        """Skip one bracketed group starting at the current '(', '[', '{' or '<'."""
        pairs = {"(": ")", "[": "]", "{": "}", "<": ">"}
        stack: list[str] = []
        start = self.i
        while True:
            t, k = self.texts[self.i], self.kinds[self.i]
            if k == "EOF":
                raise self.error("a closing bracket", at=start)
            self.i += 1
            if k != "PUNCT":
                continue
            if t in pairs:
                stack.append(pairs[t])
            elif stack and t == stack[-1]:
                stack.pop()
                if not stack:
                    return

    # -- types -------------------------------------------------------------------------
    def type_(self, depth: int = 0) -> Shape:
        """One type: a tensor, a token, a tuple (nested at most MAX_TUPLE_DEPTH deep, as in
        HLO text), or a scalar element type."""
        k, t = self.kinds[self.i], self.texts[self.i]
        if k == "IDENT" and t == "tuple" and self.text(1) == "<":
            if depth >= MAX_TUPLE_DEPTH:
                raise self.error(f"a type: tuples nest at most {MAX_TUPLE_DEPTH} deep")
            self.i += 2
            elements: list[Shape] = []
            if not self.eat(">"):
                elements.append(self.type_(depth + 1))
                while self.eat(","):
                    elements.append(self.type_(depth + 1))
                self.expect(">", "'>' to close the tuple type")
            return TupleShape(tuple(elements))
        if k == "TYPE" or (k == "IDENT" and t in ELEMENT_TYPES):
            try:
                shape = parse_type(t)
            except PieceError as exc:
                raise HloError(exc.message, self.source, self.starts[self.i] + exc.offset,
                               E.UNSUPPORTED_FEATURE if "supported" in exc.message
                               else E.SYNTAX) from None
            self.i += 1
            return shape
        raise self.error("a type like tensor<4x8xf32>")

    def is_type(self) -> bool:
        k, t = self.kinds[self.i], self.texts[self.i]
        return k == "TYPE" or (k == "IDENT" and (t in ELEMENT_TYPES or t == "tuple"))

    def type_list(self) -> list[Shape]:
        """`(t, t)` or a single type."""
        if self.eat("("):
            out: list[Shape] = []
            if not self.eat(")"):
                out.append(self.type_())
                while self.eat(","):
                    out.append(self.type_())
                self.expect(")", "')' or ',' in the type list")
            return out
        return [self.type_()]

    # -- attribute values --------------------------------------------------------------
    def value(self, typed: bool = False) -> object:
        """One attribute value. `typed`: inside an attribute dictionary, where a value may
        be followed by ``: type`` (its type is kept for dense<>, dropped otherwise)."""
        k, t, at = self.kinds[self.i], self.texts[self.i], self.starts[self.i]
        self.i += 1
        out: object
        if k == "NUM":
            out = int(t, 16) if t.startswith(("0x", "-0x")) else (
                float(t) if any(c in t for c in ".eE") else int(t))
        elif k == "STRING":
            out = unquote(t)
        elif k == "SYM":
            out = Sym(unquote(t[1:]) if t[1] == '"' else t[1:])
        elif k == "DENSE":
            out = DenseAttr(t[t.index("<") + 1:-1], at + t.index("<") + 1)
        elif k == "ARRAY":
            out = _array(t)
        elif k == "HASH":
            name, _, body = t[1:].partition("<")
            out = HashAttr(name, body[:-1], at + len(name) + 2)
        elif k in ("TYPE",) or (k == "IDENT" and t in ELEMENT_TYPES):
            self.i -= 1
            out = self.type_()
        elif k == "IDENT":
            out = True if t in ("true", "unit") else False if t == "false" else Word(t)
        elif t == "[":
            out = self.list_rest()
        elif t == "{":
            self.i -= 1
            out = self.dict_()
        elif t == "(":  # a function type: (t, ...) -> t or (t, ...)
            self.i -= 1
            ins = self.type_list()
            self.expect("->", "'->' in the function type")
            out = FunctionType(tuple(ins), tuple(self.type_list()))
        else:
            self.i -= 1
            raise self.error("an attribute value")
        if typed and self.at(":") and (self.kind(1) == "TYPE" or self.text(1) in ELEMENT_TYPES):
            self.i += 1
            ty = self.type_()
            if isinstance(out, DenseAttr):
                out = DenseAttr(out.body, out.offset, ty)
        return out

    def list_rest(self, chain: bool = True) -> object:
        """After '[': the list's values (``a:b[:c]`` ranges as tuples), then any
        ``x [..]`` parts and ``-> [..]`` (a `Chain`)."""
        items: list[object] = []
        if not self.eat("]"):
            while True:
                v = self.value()
                if self.at(":") and self.kind(1) == "NUM":
                    parts = [v]
                    while self.eat(":"):
                        parts.append(self.value())
                    v = tuple(parts)
                items.append(v)
                if self.eat("]"):
                    break
                self.expect(",", "',' or ']' in the list")
        first = tuple(items)
        if not chain or not (self.at("x") or self.at("->")):
            return list(items)
        lists: list[tuple] = [first]
        while self.eat("x"):
            self.expect("[", "'[' after 'x'")
            lists.append(tuple(self.list_rest(False)))  # type: ignore[arg-type]
        arrow: tuple | None = None
        if self.eat("->"):
            self.expect("[", "'[' after '->'")
            arrow = tuple(self.list_rest(False))  # type: ignore[arg-type]
        return Chain(tuple(lists), arrow)

    def dict_(self, close: str = "}", offsets: dict[str, int] | None = None
              ) -> dict[str, object]:
        """`{key = value, unit_key, "quoted" = value}` from the current '{'; where each
        value starts goes into `offsets` when given."""
        self.expect("{")
        out: dict[str, object] = {}
        if offsets is None:
            offsets = {}
        if self.eat(close):
            return out
        while True:
            k = self.kinds[self.i]
            if k not in ("IDENT", "STRING"):
                raise self.error("an attribute name")
            key = unquote(self.texts[self.i]) if k == "STRING" else self.texts[self.i]
            self.i += 1
            if self.eat("="):
                offsets[key] = self.starts[self.i]
                out[key] = self.value(typed=True)
            else:
                out[key] = True
            if self.eat(close):
                return out
            self.expect(",", f"',' or '{close}' in the attribute dictionary")


def _array(text: str) -> tuple:
    """`array<i64: 1, 2>` -> (1, 2); `array<i1: true, false>` -> (True, False)."""
    body = text[6:-1]
    _, _, values = body.partition(":")
    out: list[object] = []
    for v in values.split(","):
        v = v.strip()
        if v:
            out.append(v == "true" if v in ("true", "false") else
                       float(v) if any(c in v for c in ".eE") else int(v))
    return tuple(out)


def as_word(value: object) -> str | None:
    """The keyword of a bare word or a quoted string value, else None."""
    if isinstance(value, Word):
        return value.text
    return value if isinstance(value, str) else None
