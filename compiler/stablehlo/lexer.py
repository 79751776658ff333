"""The MLIR tokenizer: one regular expression over the whole text.

Whole types (``tensor<4x8xf32>``), ``dense<...>``, ``array<...>`` and ``#dialect<...>``
attributes are single tokens, and ``loc(...)`` locations are skipped with comments and
blanks, so the parser sees few tokens per op. `TokenList` holds the tokens' kinds, texts and
offsets in three lists.
"""

from __future__ import annotations

import re

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError, Source

_STR = r'"(?:[^"\\]|\\.)*+"'
# Possessive repeats (`++`, `*+`): text that never closes fails at once, no backtracking.
_NEST1 = r"<(?:[^<>\"\-]++|->|-|" + _STR + r")*+>"
_NEST2 = r"<(?:[^<>\"\-]++|->|-|" + _STR + r"|" + _NEST1 + r")*+>"
_NEST3 = r"<(?:[^<>\"\-]++|->|-|" + _STR + r"|" + _NEST2 + r")*+>"
_PAREN1 = r"\((?:[^()\"]++|" + _STR + r")*+\)"
_PAREN2 = r"\((?:[^()\"]++|" + _STR + r"|" + _PAREN1 + r")*+\)"
_PAREN3 = r"\((?:[^()\"]++|" + _STR + r"|" + _PAREN2 + r")*+\)"

_TOKEN = re.compile(r"\s*(?:" + "|".join([
    r"(?P<PUNCT>[,=:()\[\]{}<>*?+|])",
    r"(?P<VALUE>%[\w$.\-]+(?:#\d+)?)",
    r"(?P<TYPE>tensor<[\w.]*>|tensor" + _NEST3 + r"|![A-Za-z_][\w.]*(?:" + _NEST2 + r")?)",
    r"(?P<SKIP>(?:#[\w.$]+\s*=\s*)?loc" + _PAREN3 + r"|//[^\n]*)",
    r"(?P<DENSE>dense(?:_resource)?<[^<>]*>)",
    r"(?P<ARRAY>array<[^<>]*>)",
    r"(?P<HASH>#[A-Za-z_][\w.$]*(?:" + _NEST3 + r")?)",
    r"(?P<SYM>@[\w$.\-]+|@" + _STR + ")",
    r"(?P<BLOCK>\^[\w$.\-]+)",
    r"(?P<STRING>" + _STR + ")",
    r"(?P<ARROW>->)",
    r"(?P<NUM>[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?))",
    r"(?P<IDENT>[A-Za-z_][\w$.]*)",
    r"(?P<ERROR>\S)",
]) + ")")


class TokenList:
    """The tokens of `source` (blanks, comments and locations dropped), then 'EOF's."""

    __slots__ = ("kinds", "texts", "starts", "source")

    def __init__(self, source: Source) -> None:
        self.source = source
        kinds: list[str] = []
        texts: list[str] = []
        starts: list[int] = []
        for m in _TOKEN.finditer(source.text):
            kind = m.lastgroup
            assert kind is not None  # every alternative of _TOKEN is a named group
            if kind == "SKIP":
                continue
            if kind == "ERROR":
                raise HloError(f"expected an MLIR token, found {m.group(kind)!r}", source,
                               m.start(kind), E.SYNTAX)
            kinds.append(kind)
            texts.append(m.group(kind))
            starts.append(m.start(kind))
        for _ in range(8):  # sentinels: readers may look a few tokens past the end
            kinds.append("EOF")
            texts.append("")
            starts.append(len(source.text))
        self.kinds = kinds
        self.texts = texts
        self.starts = starts
