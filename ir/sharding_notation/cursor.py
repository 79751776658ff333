"""A small cursor over one piece of text (an attribute value, a literal), for the
hand-written sub-parsers. Errors carry the offset where they happened, relative to the
piece; the caller adds the piece's own offset in the file."""

from __future__ import annotations

import re

_WS = re.compile(r"\s*")
_INT = re.compile(r"[-+]?\d+")
_WORD = re.compile(r"%?[A-Za-z_$][\w.\-$]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class PieceError(ValueError):
    """A syntax error inside a piece of text, at `offset` within it."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


def found(text: str, pos: int) -> str:
    """How the text at `pos` is named in an error message."""
    rest = text[pos:].lstrip()
    if not rest:
        return "the end of the value"
    m = re.match(r"[\w.%\-]+|\S", rest)
    return repr(m.group(0)) if m else repr(rest[:1])


class Cursor:
    """Reads `text` left to right; every `expect_*` raises PieceError naming what it wanted."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str, pos: int = 0) -> None:
        self.text = text
        self.pos = pos

    def error(self, expected: str, at: int | None = None) -> PieceError:
        pos = self.pos if at is None else at
        pos += len(self.text[pos:]) - len(self.text[pos:].lstrip())
        return PieceError(f"expected {expected}, found {found(self.text, pos)}", pos)

    def ws(self) -> None:
        self.pos = _WS.match(self.text, self.pos).end()  # type: ignore[union-attr]

    def at_end(self) -> bool:
        self.ws()
        return self.pos >= len(self.text)

    def peek(self, s: str) -> bool:
        self.ws()
        return self.text.startswith(s, self.pos)

    def eat(self, s: str) -> bool:
        if self.peek(s):
            self.pos += len(s)
            return True
        return False

    def expect(self, s: str, what: str | None = None) -> None:
        if not self.eat(s):
            raise self.error(what or repr(s))

    def int_(self, what: str = "an integer") -> int:
        self.ws()
        m = _INT.match(self.text, self.pos)
        if not m:
            raise self.error(what)
        self.pos = m.end()
        return int(m.group(0))

    def word(self, what: str = "a name") -> str:
        self.ws()
        m = _WORD.match(self.text, self.pos)
        if not m:
            raise self.error(what)
        self.pos = m.end()
        return m.group(0)

    def string(self, what: str = "a quoted string") -> str:
        self.ws()
        m = _STRING.match(self.text, self.pos)
        if not m:
            raise self.error(what)
        self.pos = m.end()
        return unquote(m.group(0))

    def ints(self, open_: str, close: str, what: str) -> tuple[int, ...]:
        """`open_ int, int, ... close` (possibly empty)."""
        self.expect(open_, f"'{open_}' to start {what}")
        out: list[int] = []
        if self.eat(close):
            return ()
        while True:
            out.append(self.int_(f"an integer in {what}"))
            if self.eat(close):
                return tuple(out)
            self.expect(",", f"',' or '{close}' in {what}")

    def finish(self, what: str) -> None:
        if not self.at_end():
            raise self.error(f"the end of {what}")


_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "r": "\r"}


def unquote(s: str) -> str:
    """The value of a C-escaped double-quoted string (with its quotes)."""
    body = s[1:-1]
    if "\\" not in body:
        return body
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if nxt == "x" and re.match(r"[0-9a-fA-F]{2}", body[i + 2:i + 4]):
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
                continue
            if re.match(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(chr(int(body[i + 1:i + 4], 8)))
                i += 4
                continue
        out.append(c)
        i += 1
    return "".join(out)
