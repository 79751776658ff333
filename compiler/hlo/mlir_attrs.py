"""MLIR attribute dictionaries, as XLA prints a typed-FFI custom call's `backend_config`.

`jax.jit(f).lower(...).as_text(dialect="hlo")` of a call into a typed FFI handler (LAPACK's
`lapack_spotrf_ffi` for `jnp.linalg.cholesky` on CPU, since JAX 0.4.3x) writes its
attributes as an MLIR dictionary, not a string: `backend_config={uplo = 76 : ui8}`.

`parse_mlir_dict(text)` reads `{name = value, ...}`: names bare or quoted; a name alone is a
unit attribute (True); values are integers and floats with an optional `: type`, `true` /
`false`, strings, `[...]` arrays, nested dictionaries, `array<i64: 1, 2>`, and any other
typed attribute (`dense<...> : tensor<...>`, `#dialect<...>`, a bare type) kept as its text.
A malformed dictionary raises `PieceError` at the offset where it stopped making sense.
"""

from __future__ import annotations

import re
from types import MappingProxyType

from nxcc.ir.sharding_notation.cursor import Cursor, PieceError

_NAME = re.compile(r"[A-Za-z_][\w.$\-]*")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan)")
_TYPE = re.compile(r"\s*:\s*([A-Za-z_][\w.]*(?:<[^<>]*>)?)")
_OPENERS = {"<": ">", "(": ")", "[": "]", "{": "}"}


def parse_mlir_dict(text: str) -> MappingProxyType:
    """The dictionary `text` holds (see the module docstring), and nothing after it."""
    cur = Cursor(text)
    return _dict(cur, whole=True)


def looks_like_mlir_dict(text: str) -> bool:
    """Whether `text` starts as an MLIR dictionary does (`{}` or `{name =` / `{name,`)."""
    return re.match(r"\{\s*(\}|\"[^\"]*\"\s*[=,}]|[A-Za-z_][\w.$\-]*\s*[=,}])", text) is not None


def _dict(cur: Cursor, whole: bool = False) -> MappingProxyType:
    """`{...}` at the cursor; with `whole`, the text must end after it."""
    cur.expect("{", "'{' to start an attribute dictionary")
    out: dict[str, object] = {}
    closed = cur.eat("}")
    while not closed:
        name = _name(cur)
        out[name] = _value(cur) if cur.eat("=") else True
        closed = cur.eat("}")
        if not closed:
            cur.expect(",", "',' or '}' between attributes")
    if whole:
        cur.finish("the attribute dictionary")
    return MappingProxyType(out)


def _name(cur: Cursor) -> str:
    if cur.peek('"'):
        return cur.string("an attribute name")
    m = _NAME.match(cur.text, cur.pos)
    if not m:
        raise cur.error("an attribute name")
    cur.pos = m.end()
    return m.group(0)


def _value(cur: Cursor) -> object:
    cur.ws()
    if cur.peek("{"):
        return _dict(cur)
    if cur.peek("["):
        return _array(cur)
    if cur.peek('"'):
        return cur.string()
    m = _NUMBER.match(cur.text, cur.pos)
    if m and not _NAME.match(cur.text, m.end()):
        cur.pos = m.end()
        _skip_type(cur)
        return _number(m.group(0))
    if cur.text.startswith(("true", "false"), cur.pos):
        word = "true" if cur.text.startswith("true", cur.pos) else "false"
        cur.pos += len(word)
        return word == "true"
    return _raw(cur)


def _array(cur: Cursor) -> tuple[object, ...]:
    cur.expect("[")
    out: list[object] = []
    if cur.eat("]"):
        return ()
    while True:
        out.append(_value(cur))
        if cur.eat("]"):
            return tuple(out)
        cur.expect(",", "',' or ']' in an array attribute")


def _number(text: str) -> int | float:
    lowered = text.lower()
    if lowered.startswith(("0x", "-0x", "+0x")):
        return int(lowered, 16)
    if re.fullmatch(r"[-+]?\d+", text):
        return int(text)
    return float(text)


def _skip_type(cur: Cursor) -> None:
    m = _TYPE.match(cur.text, cur.pos)
    if m:
        cur.pos = m.end()


def _raw(cur: Cursor) -> str:
    """A typed attribute kept as text: up to the next ',' or closing bracket at depth 0."""
    start, depth_stack = cur.pos, []
    text = cur.text
    while cur.pos < len(text):
        c = text[cur.pos]
        if c == '"':
            cur.string()
            continue
        if text.startswith("->", cur.pos):  # a function type's arrow
            cur.pos += 2
            continue
        if c in _OPENERS:
            depth_stack.append(_OPENERS[c])
        elif depth_stack and c == depth_stack[-1]:
            depth_stack.pop()
        elif not depth_stack and c in ",}]":
            break
        elif c in ">)]}":
            raise PieceError(f"expected an attribute value, found an unmatched {c!r}",
                             cur.pos)
        cur.pos += 1
    if depth_stack:
        raise PieceError(f"expected {depth_stack[-1]!r} to close an attribute value",
                         cur.pos)
    value = text[start:cur.pos].strip()
    if not value:
        raise cur.error("an attribute value", start)
    return value
