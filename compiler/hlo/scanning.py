"""Finding where an attribute value ends, without interpreting it.

An attribute value runs to the first top-level ',' or blank: bare text
(``b01f_01io->b01f``, ``[2,2]<=[4]T(1,0)``), quoted strings, and bracketed groups
(``{...}``, ``[...]``, ``(...)``) that nest and may contain strings; it stays on one line.
The mesh form of replica groups (``@mesh<x=2,y=2> {x}``, newer XLA's
``mesh['x'=2,'y'=2] {'x'}``, current XLA's ``mesh[...], device_ids=(...) {'x'}``) is the
one value with a blank (and a top-level comma).
"""

from __future__ import annotations

import re

from nxcc.ir.sharding_notation.cursor import PieceError

# Bare runs, strings, and brace/bracket/paren groups that do not nest: most values.
_FAST_VALUE = re.compile(
    r'(?:[^\s,{}\[\]()"]+|"(?:[^"\\\n]|\\.)*"|\{(?:[^{}"\n]|"(?:[^"\\\n]|\\.)*")*\}'
    r'|\[[^\[\]{}()"\n]*\]|\([^(){}\[\]"\n]*\))+')
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_MESH = re.compile(r"@mesh<[^<>\n]*>|mesh\[[^\[\]\n]*\]")
_CLOSE = {"{": "}", "[": "]", "(": ")"}
_STOP = " \t\r\n,"


def scan_value(text: str, pos: int) -> int:
    """The end of the attribute value starting at `pos`; PieceError (offset relative to
    `pos`) when a bracket or string is not closed on its line, or there is no value."""
    m = _FAST_VALUE.match(text, pos)
    if m is not None:
        end = m.end()
        if end >= len(text) or text[end] in _STOP or text[end] in "}])":
            if not text.startswith(("@mesh<", "mesh["), pos):
                return end
    return _scan_slow(text, pos)


_DEVICE_IDS = re.compile(r",?[ \t]*device_ids=(?=\()")


def _device_ids(text: str, pos: int) -> int:
    """Past current XLA's ``, device_ids=`` after a mesh, at its '(' (`pos` if absent)."""
    m = _DEVICE_IDS.match(text, pos)
    return m.end() if m else pos


def _scan_slow(text: str, pos: int) -> int:
    """`scan_value` for the values its regular expression does not cover, and every error."""
    if text.startswith(("@mesh<", "mesh["), pos):
        return _scan_mesh(text, pos)
    return _scan_groups(text, pos)


def _scan_mesh(text: str, pos: int) -> int:
    """The end of a mesh form of replica groups: the mesh, then an optional ``(...)`` and an
    optional ``{...}`` (which may follow a blank)."""
    n = len(text)
    m = _MESH.match(text, pos)
    if m is None:
        close = ">" if text[pos] == "@" else "]"
        raise PieceError(f"expected '{close}' to close the mesh, found the end of the line", 0)
    pos = _device_ids(text, m.end())
    if pos < n and text[pos] == "(":
        pos = _scan_slow(text, pos)
    j = pos
    while j < n and text[j] in " \t":
        j += 1
    if j < n and text[j] == "{":
        return _scan_slow(text, j)
    return pos


def _scan_groups(text: str, start: int) -> int:
    """The end of a value of bare text, strings and nested bracketed groups from `start`."""
    n = len(text)
    pos = start
    stack: list[str] = []
    while pos < n:
        c = text[pos]
        if c == '"':
            pos = _string_end(text, pos, start)
            continue
        if c in "{[(":
            stack.append(c)
        elif c in "}])":
            if not stack:
                break
            _check_closes(stack.pop(), c, pos - start)
        elif c == "\n" or (not stack and c in _STOP):
            if stack:
                raise _unclosed(stack[-1], "the end of the line", pos - start)
            break
        pos += 1
    if stack:
        raise _unclosed(stack[-1], "the end of the text", pos - start)
    if pos == start:
        found = repr(text[pos]) if pos < n else "the end of the text"
        raise PieceError(f"expected an attribute value, found {found}", 0)
    return pos


def _string_end(text: str, pos: int, start: int) -> int:
    """The end of the quoted string at `pos`, which must close on its line."""
    sm = _STRING.match(text, pos)
    if sm is None:
        raise PieceError("expected '\"' to close the string, found the end of the line",
                         pos - start)
    return sm.end()


def _check_closes(open_: str, close: str, offset: int) -> None:
    """PieceError unless `close` is the bracket that closes `open_`."""
    if _CLOSE[open_] != close:
        raise PieceError(f"expected '{_CLOSE[open_]}' to close '{open_}', found '{close}'",
                         offset)


def _unclosed(open_: str, found: str, offset: int) -> PieceError:
    """The error for a group opened by `open_` that is still open at `found`."""
    return PieceError(f"expected '{_CLOSE[open_]}' to close the '{open_}' of this value, "
                      f"found {found}", offset)
