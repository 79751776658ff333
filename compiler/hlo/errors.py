"""The HLO frontend's one exception type, positioned in the source text.

Message format (the first line is what a one-line reporter keeps)::

    model.hlo:12:31: expected ',' or ')' after an operand, found 'foo'
      %add.3 = f32[4]{0} add(%x %y)
                                ^

Codes (the neuronx-cc ``NCC_E...`` convention, defined in `nxcc.errors`):

- ``NCC_EFRM001``: a syntax error, or text that is not a well-formed HLO module;
- ``NCC_EFRM002``: a semantic error (undefined name, shapes that do not agree, bad attribute);
- ``NCC_EUOC002``: an opcode the compiler does not support;
- ``NCC_EUOC003``: an unsupported feature of a supported opcode;
- ``NCC_EHCA005``: a custom-call target the compiler does not know;
- ``NCC_EDTY001``: an element type the compiler has no type for.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from nxcc import errors
from nxcc.errors import CompileError

SYNTAX = errors.MALFORMED_MODEL
SEMANTIC = errors.INVALID_MODEL
UNSUPPORTED_OP = errors.UNSUPPORTED_OPERATOR
UNSUPPORTED_FEATURE = errors.UNSUPPORTED_FEATURE
UNKNOWN_CUSTOM_CALL = errors.UNKNOWN_CUSTOM_CALL
UNSUPPORTED_DTYPE = errors.UNSUPPORTED_DTYPE
DYNAMIC = errors.DYNAMIC_SHAPE


@dataclass(eq=False)
class Source:
    """HLO text with its name, able to turn a character offset into a line and column."""

    text: str
    name: str = "<hlo>"
    _starts: list[int] = field(default_factory=list, repr=False)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based (line, column) of character `offset` (clamped to the text)."""
        if not self._starts:
            starts = [0]
            find = self.text.find
            i = find("\n")
            while i >= 0:
                starts.append(i + 1)
                i = find("\n", i + 1)
            self._starts = starts
        offset = max(0, min(offset, len(self.text)))
        line = bisect.bisect_right(self._starts, offset)
        return line, offset - self._starts[line - 1] + 1

    def line_text(self, line: int) -> str:
        """The text of 1-based `line`, without its newline ('' when out of range)."""
        self.line_col(0)
        if not 1 <= line <= len(self._starts):
            return ""
        start = self._starts[line - 1]
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end]


class HloError(CompileError):
    """An HLO text the frontend cannot compile, with its position and an NCC `code`.

    `str(exc)` is ``FILE:LINE:COL: message`` followed by the source line and a caret under
    the column; `headline` is the first line alone; `line` and `column` are 1-based.
    """

    def __init__(self, message: str, source: Source | None = None, offset: int | None = None,
                 code: str = SYNTAX) -> None:
        self.message = " ".join(str(message).split())
        self.source_name = source.name if source is not None else "<hlo>"
        self.line = self.column = 0
        self.snippet = ""
        if source is not None and offset is not None:
            self.line, self.column = source.line_col(offset)
            self.snippet = source.line_text(self.line).replace("\t", " ")
        super().__init__(code, str(self))

    @property
    def headline(self) -> str:
        if self.line:
            return f"{self.source_name}:{self.line}:{self.column}: {self.message}"
        return f"{self.source_name}: {self.message}"

    def __str__(self) -> str:
        if not self.line:
            return self.headline
        caret = " " * (self.column - 1) + "^"
        return f"{self.headline}\n  {self.snippet}\n  {caret}"


def describe(text: str, limit: int = 24) -> str:
    """How a found piece of text is named in an error: quoted and shortened, or 'the end'."""
    if not text:
        return "the end of the text"
    first = text.split("\n", 1)[0].strip()
    if not first:
        return "the end of the line"
    if len(first) > limit:
        first = first[:limit] + "..."
    return repr(first)
