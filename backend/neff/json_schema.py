"""A small declarative schema for the JSON a NEFF holds, and a depth-bounded JSON reader.

A schema is built from a few node kinds, each with `check(value, path)` that raises
`SchemaError(path, problem)` at the first value that does not conform:

- `Int(lo, hi)` an int (never a bool) in [lo, hi]; `Num()` an int or float; `Bool()`;
  `Str(choices)` a string (one of `choices` when given); `AnyValue()` any JSON value;
- `Nullable(spec)` null or `spec`; `ListOf(item, min_len, max_len, exact)`;
  `MapOf(value)` an object with string keys; `Obj(required, optional)` an object whose
  `required` keys must be present and whose known keys are checked (others are ignored, so
  newer writers may add keys).

The NEFF's own schemas (manifest, program) are declared with these in
`backend.neff.neff_schema`; only shapes and references beyond what a value alone says are
checked in code (`backend.runtime.checked_neff`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.neff.errors import SCHEMA, NeffError
from nxcc.backend.neff.limits import MAX_ITEMS, MAX_JSON_DEPTH


class SchemaError(ValueError):
    """A value that does not conform: `path` (``functions.main.slots[3].dtype``) and what."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '(top level)'}: {problem}")
        self.path = path
        self.problem = problem


def _kind(value: object) -> str:
    if value is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


class Spec:
    """A schema node."""

    what = "a value"

    def check(self, value: object, path: str) -> None:
        raise NotImplementedError

    def wrong(self, value: object, path: str) -> SchemaError:
        shown = repr(value) if not isinstance(value, list | dict) else _kind(value)
        return SchemaError(path, f"expected {self.what}, found {shown[:60]}")


class AnyValue(Spec):
    def check(self, value: object, path: str) -> None:
        return None


class Int(Spec):
    def __init__(self, lo: int | None = None, hi: int | None = None) -> None:
        self.lo, self.hi = lo, hi
        bounds = [f">= {lo}" if lo is not None else "", f"<= {hi}" if hi is not None else ""]
        self.what = "an integer" + (" " + " and ".join(b for b in bounds if b) if any(bounds)
                                    else "")

    def check(self, value: object, path: str) -> None:
        if type(value) is not int:
            raise self.wrong(value, path)
        if (self.lo is not None and value < self.lo) or (self.hi is not None
                                                          and value > self.hi):
            raise self.wrong(value, path)


class Num(Spec):
    what = "a number"

    def check(self, value: object, path: str) -> None:
        if type(value) not in (int, float):
            raise self.wrong(value, path)


class Bool(Spec):
    what = "a boolean"

    def check(self, value: object, path: str) -> None:
        if type(value) is not bool:
            raise self.wrong(value, path)


class Str(Spec):
    def __init__(self, choices: Sequence[str] = (), max_len: int = 4096,
                 label: str = "") -> None:
        self.choices = frozenset(choices)
        self.max_len = max_len
        self.what = label or ("a string" if not choices else "one of " + ", ".join(
            sorted(choices)))

    def check(self, value: object, path: str) -> None:
        if type(value) is not str or len(value) > self.max_len:
            raise self.wrong(value, path)
        if self.choices and value not in self.choices:
            raise self.wrong(value, path)


class Nullable(Spec):
    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.what = f"null or {spec.what}"

    def check(self, value: object, path: str) -> None:
        if value is not None:
            self.spec.check(value, path)


class ListOf(Spec):
    def __init__(self, item: Spec, min_len: int = 0, max_len: int = MAX_ITEMS) -> None:
        self.item, self.min_len, self.max_len = item, min_len, max_len
        self.what = "a list"

    def check(self, value: object, path: str) -> None:
        if type(value) is not list:
            raise self.wrong(value, path)
        if not self.min_len <= len(value) <= self.max_len:
            raise SchemaError(path, f"expected {self.min_len} to {self.max_len} entries, "
                              f"found {len(value)}")
        for i, v in enumerate(value):
            self.item.check(v, f"{path}[{i}]")


class MapOf(Spec):
    def __init__(self, value: Spec, max_len: int = MAX_ITEMS) -> None:
        self.value, self.max_len = value, max_len
        self.what = "an object"

    def check(self, value: object, path: str) -> None:
        if type(value) is not dict:
            raise self.wrong(value, path)
        if len(value) > self.max_len:
            raise SchemaError(path, f"expected at most {self.max_len} entries, "
                              f"found {len(value)}")
        for k, v in value.items():
            self.value.check(v, _join(path, k))


class Obj(Spec):
    def __init__(self, required: Mapping[str, Spec],
                 optional: Mapping[str, Spec] | None = None) -> None:
        self.required = dict(required)
        self.optional = dict(optional or {})
        self.what = "an object"

    def check(self, value: object, path: str) -> None:
        if type(value) is not dict:
            raise self.wrong(value, path)
        for key, spec in self.required.items():
            if key not in value:
                raise SchemaError(path, f"missing required key '{key}'")
            spec.check(value[key], _join(path, key))
        for key, spec in self.optional.items():
            if key in value:
                spec.check(value[key], _join(path, key))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else str(key)


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OPEN = np.frombuffer(b"[{", np.uint8)
_CLOSE = np.frombuffer(b"]}", np.uint8)


def json_depth(raw: bytes) -> int:
    """The deepest nesting of lists and objects in JSON text `raw` (strings skipped),
    computed without parsing, so a deeply nested document costs no recursion."""
    bare = np.frombuffer(_STRING.sub(b'""', raw), np.uint8)
    step = np.isin(bare, _OPEN).astype(np.int64) - np.isin(bare, _CLOSE).astype(np.int64)
    return int(np.cumsum(step).max(initial=0))


def load_json(raw: bytes, source: str, member: str) -> object:
    """Parse payload member `member` as JSON, refusing nesting beyond MAX_JSON_DEPTH before
    parsing; NeffError (NRT_ENEFF002 for depth, the container code for syntax)."""
    depth = json_depth(raw)
    if depth > MAX_JSON_DEPTH:
        raise NeffError(source, f"{member}: JSON nested {depth} deep, the limit is "
                        f"{MAX_JSON_DEPTH}", code=SCHEMA)
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise NeffError(source, f"{member} is not valid JSON: {exc}") from None


def conform(value: object, spec: Spec, source: str, member: str) -> None:
    """`spec.check(value)`, a failure raised as NeffError(NRT_ENEFF002) naming `member`."""
    try:
        spec.check(value, "")
    except SchemaError as exc:
        raise NeffError(source, f"{member}: {exc}", code=SCHEMA) from None
