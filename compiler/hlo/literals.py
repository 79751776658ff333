"""Constant literals: the text inside ``constant(...)`` as numpy arrays.

Forms: a scalar (``1.5``, ``-inf``, ``nan``, ``true``), nested braces for arrays
(``{ {1, 2}, {3, 4} }``), an optional leading shape as older dumps print it
(``f32[2] {1, 2}``), tuples ``(1, {2, 3})``, and the elided ``{...}``. Values are checked
against the instruction's shape: count, nesting depth, and each value's syntax.
"""

from __future__ import annotations

import math
import re

import numpy as np

from nxcc.compiler.hlo.dtypes import numpy_dtype_of
from nxcc.compiler.hlo.nodes import ArrayShape, Shape, TupleShape
from nxcc.ir.sharding_notation.cursor import PieceError

_TOKEN = re.compile(r"\s*([{}(),]|[^\s{}(),]+)")
_LEADING_SHAPE = re.compile(r"\s*[a-z][a-z0-9]*\[[^\]]*\](?:\{[^{}]*\})?\s+")
_FLOAT = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|inf|nan)\Z")
_INTEGER = re.compile(r"[-+]?\d+\Z")
_VALUE = re.compile(r"[^\s{},]+")
_BLANKS = re.compile(r"\s+")
_SCALAR = re.compile(r"[-+]?[\w.]+\Z")
ELIDED = "{...}"


def is_elided(text: str) -> bool:
    return text.strip() == ELIDED


def parse_literal(text: str, shape: Shape) -> np.ndarray | tuple:
    """The value of literal `text` of `shape` (a tuple of values for a tuple shape);
    PieceError (offset within `text`) when it does not fit the shape."""
    if isinstance(shape, ArrayShape) and not shape.dims:
        word = text.strip()
        if word and _SCALAR.match(word):  # the common case: one scalar, no braces
            return convert_values([word], [text.index(word)], shape)
    if isinstance(shape, ArrayShape) and shape.dims and "(" not in text:
        fast = _array_fast(text, shape)
        if fast is not None:
            return fast
    tokens = [(m.group(1), m.start(1)) for m in _TOKEN.finditer(text)]
    reader = _Reader(text, tokens)
    value = reader.value(shape)
    if reader.i < len(tokens):
        tok, at = tokens[reader.i]
        raise PieceError(f"expected the end of the constant, found {tok!r}", at)
    return value


def _array_fast(text: str, shape: ArrayShape) -> np.ndarray | None:
    """A large array literal read with vectorised string operations, when its braces are
    exactly those of `shape` and every value is a plain number; None otherwise (the token
    reader then finds and reports the problem)."""
    skeleton = _VALUE.sub("x", _BLANKS.sub("", text))
    if skeleton != _skeleton(shape.dims) or shape.dtype == "pred":
        return None
    values = _VALUE.findall(text)
    dtype = numpy_dtype_of(shape.dtype)
    try:
        if dtype.kind == "f" or shape.dtype == "bf16":
            return np.array(values).astype(np.float64).astype(dtype).reshape(shape.dims)
        ints = np.array(values).astype(np.int64 if dtype.kind == "i" else np.uint64)
    except (ValueError, OverflowError):
        return None
    info = np.iinfo(dtype)
    if ints.size and (ints.min() < info.min or ints.max() > info.max):
        return None
    return ints.astype(dtype).reshape(shape.dims)


def _skeleton(dims: tuple[int, ...]) -> str:
    inner = "x"
    for n in reversed(dims):
        inner = "{" + ",".join([inner] * n) + "}"
    return inner


class _Reader:
    def __init__(self, text: str, tokens: list[tuple[str, int]]) -> None:
        self.text = text
        self.tokens = tokens
        self.i = 0

    def peek(self) -> tuple[str, int]:
        if self.i < len(self.tokens):
            return self.tokens[self.i]
        return "", len(self.text)

    def fail(self, expected: str) -> PieceError:
        tok, at = self.peek()
        what = repr(tok) if tok else "the end of the constant"
        return PieceError(f"expected {expected}, found {what}", at)

    def value(self, shape: Shape) -> np.ndarray | tuple:
        tok, at = self.peek()
        # An older dump writes the shape first: `f32[2] {1, 2}`.
        m = _LEADING_SHAPE.match(self.text, at) if tok and tok[0].isalpha() else None
        if m is not None and "[" in tok:
            while self.i < len(self.tokens) and self.tokens[self.i][1] < m.end():
                self.i += 1
        if isinstance(shape, TupleShape):
            return self.tuple_value(shape)
        return self.array_value(shape)

    def tuple_value(self, shape: TupleShape) -> tuple:
        if self.peek()[0] != "(":
            raise self.fail(f"'(' to start a tuple constant of {len(shape.elements)} elements")
        self.i += 1
        out = []
        for k, element in enumerate(shape.elements):
            if k:
                if self.peek()[0] != ",":
                    raise self.fail("',' between tuple constant elements")
                self.i += 1
            out.append(self.value(element))
        if self.peek()[0] != ")":
            raise self.fail("')' to end the tuple constant")
        self.i += 1
        return tuple(out)

    def array_value(self, shape: ArrayShape) -> np.ndarray:
        rank = len(shape.dims)
        flat: list[str] = []
        where: list[int] = []
        if rank == 0:
            tok, at = self.peek()
            if not tok or tok in "{}(),":
                raise self.fail(f"a {shape.dtype} value")
            flat.append(tok)
            where.append(at)
            self.i += 1
        else:
            self.nested(shape.dims, 0, flat, where)
        return convert_values(flat, where, shape)

    def nested(self, dims: tuple[int, ...], depth: int, flat: list[str], where: list[int]
               ) -> None:
        if self.peek()[0] != "{":
            raise self.fail(f"'{{' to start dimension {depth} (size {dims[depth]})")
        self.i += 1
        count = 0
        while self.peek()[0] != "}":
            if count:
                if self.peek()[0] != ",":
                    raise self.fail("',' or '}' between values")
                self.i += 1
            if count == dims[depth]:
                raise self.fail(f"'}}' after {dims[depth]} entries of dimension {depth}")
            if depth + 1 < len(dims):
                self.nested(dims, depth + 1, flat, where)
            else:
                tok, at = self.peek()
                if not tok or tok in "{}(),":
                    raise self.fail("a value")
                flat.append(tok)
                where.append(at)
                self.i += 1
            count += 1
        if count != dims[depth]:
            raise self.fail(f"{dims[depth]} entries in dimension {depth}, not {count}")
        self.i += 1


def convert_values(flat: list[str], where: list[int], shape: ArrayShape) -> np.ndarray:
    """The values `flat` (positions `where`) as an array of `shape`'s dtype."""
    dtype = numpy_dtype_of(shape.dtype)
    n = math.prod(shape.dims)
    if len(flat) != n:
        raise PieceError(f"expected {n} values for {shape}, found {len(flat)}",
                         where[0] if where else 0)
    kind = shape.dtype
    if kind == "pred":
        out = np.empty(n, dtype=np.bool_)
        for k, tok in enumerate(flat):
            if tok in ("true", "1"):
                out[k] = True
            elif tok in ("false", "0"):
                out[k] = False
            else:
                raise PieceError(f"expected true or false, found {tok!r}", where[k])
        return out.reshape(shape.dims)
    pattern = _FLOAT if dtype.kind == "f" or kind == "bf16" else _INTEGER
    for k, tok in enumerate(flat):
        if not pattern.match(tok.lower() if pattern is _FLOAT else tok):
            what = "a number" if pattern is _FLOAT else "an integer"
            raise PieceError(f"expected {what} for {kind}, found {tok!r}", where[k])
    if pattern is _FLOAT:
        arr = np.array(flat).astype(np.float64).astype(dtype)
    else:
        ints = [int(t) for t in flat]
        info = np.iinfo(dtype)
        for k, v in enumerate(ints):
            if not info.min <= v <= info.max:
                raise PieceError(f"{v} does not fit in {kind}", where[k])
        arr = np.array(ints, dtype=dtype)
    return arr.reshape(shape.dims)
