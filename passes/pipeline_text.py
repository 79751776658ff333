"""The text of a pass pipeline: ``fold,cse,shard-partition{num_cores=2},differentiate{wrt=w,b}``.

A pipeline is passes separated by commas; a pass is its registered name, optionally
followed by its options in braces, separated by spaces (xDSL's and MLIR's ``pass{opt=1}``
form). An option is ``key=value``: the key is a field of the pass's dataclass, and the value
is read as the field's type says:

- ``int``, ``float``: a number (``num_cores=2``);
- ``bool``: ``true`` or ``false``;
- ``str``: a bare word of letters, digits and ``_.+-``, or a double-quoted JSON string;
- ``tuple[str, ...]``, ``tuple[int, ...]``: items separated by commas (``wrt=w,b``), none
  for the empty tuple (``wrt=``).

`parse_pipeline` reads the text into `PassSpec`s (syntax only); `build_pass` makes one pass
of its class and spec; `pass_text` writes a pass back, with the options that differ from
their defaults, so that ``build_pass(cls, parse(pass_text(p)))`` equals `p`. Errors are
`PipelineError`, one line naming the pass, the option and what was expected.
"""

from __future__ import annotations

import dataclasses
import json
import re
import typing
from dataclasses import dataclass

from nxcc.errors import BAD_ARGUMENT, CompileError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BARE = re.compile(r"[A-Za-z0-9_.+-]+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class PipelineError(CompileError):
    """A pipeline text that does not name registered passes with valid options (a bad
    argument: `-O`, `--print-ir-after` and SaveTemps take these names)."""

    def __init__(self, message: str) -> None:
        super().__init__(BAD_ARGUMENT, message)


@dataclass(frozen=True)
class PassSpec:
    """One pass as written: its name and each option's raw items (strings)."""

    name: str
    options: tuple[tuple[str, tuple[str, ...]], ...] = ()


def parse_pipeline(text: str) -> list[PassSpec]:
    """The passes `text` names, in order; PipelineError saying where it goes wrong."""
    reader = _Reader(text)
    specs: list[PassSpec] = []
    reader.skip_spaces()
    if reader.done():
        return specs
    while True:
        specs.append(reader.pass_spec())
        reader.skip_spaces()
        if reader.done():
            return specs
        reader.expect(",")
        reader.skip_spaces()


class _Reader:
    """A cursor over a pipeline text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def done(self) -> bool:
        return self.at >= len(self.text)

    def peek(self) -> str:
        return self.text[self.at] if not self.done() else ""

    def skip_spaces(self) -> None:
        while self.peek().isspace():
            self.at += 1

    def fail(self, what: str) -> PipelineError:
        found = repr(self.text[self.at:self.at + 12]) if not self.done() else "the end"
        return PipelineError(f"pipeline {self.text!r}: expected {what} at column "
                             f"{self.at + 1}, found {found}")

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"'{char}'")
        self.at += 1

    def match(self, pattern: re.Pattern[str], what: str) -> str:
        m = pattern.match(self.text, self.at)
        if m is None:
            raise self.fail(what)
        self.at = m.end()
        return m.group(0)

    def pass_spec(self) -> PassSpec:
        name = self.match(_NAME, "a pass name")
        options: list[tuple[str, tuple[str, ...]]] = []
        if self.peek() == "{":
            self.at += 1
            self.skip_spaces()
            while self.peek() != "}":
                key = self.match(_KEY, "an option name or '}'")
                if any(key == k for k, _ in options):
                    raise PipelineError(f"pipeline {self.text!r}: option '{key}' of {name} "
                                        "given twice")
                self.expect("=")
                options.append((key, self.items()))
                if self.peek() != "}":
                    if not self.peek().isspace():
                        raise self.fail("a space or '}'")
                    self.skip_spaces()
            self.at += 1
        return PassSpec(name, tuple(options))

    def items(self) -> tuple[str, ...]:
        """An option's value: items separated by commas (none before a space or '}')."""
        if self.peek() in ("}", "") or self.peek().isspace():
            return ()
        out = [self.item()]
        while self.peek() == ",":
            self.at += 1
            out.append(self.item())
        return tuple(out)

    def item(self) -> str:
        if self.peek() != '"':
            return self.match(_BARE, "a value")
        decoder = json.JSONDecoder()
        try:
            value, end = decoder.raw_decode(self.text, self.at)
        except json.JSONDecodeError:
            raise self.fail("a closed JSON string") from None
        self.at = end
        return str(value)


def option_types(cls: type) -> dict[str, object]:
    """The options of pass class `cls`: its init fields and their types."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls) if f.init}


def build_pass(cls: type, spec: PassSpec) -> object:
    """A pass of class `cls` with `spec`'s options; PipelineError for an option the class
    does not have or a value of the wrong type (or one its constructor refuses)."""
    types = option_types(cls)
    kwargs = {}
    for key, items in spec.options:
        if key not in types:
            known = ", ".join(types) or "none"
            raise PipelineError(f"pass {spec.name} has no option '{key}' (options: {known})")
        kwargs[key] = _value(spec.name, key, types[key], items)
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise PipelineError(f"pass {spec.name}: {exc}") from None


def _value(name: str, key: str, kind: object, items: tuple[str, ...]) -> object:
    if typing.get_origin(kind) is tuple:
        item_type = typing.get_args(kind)[0]
        return tuple(_scalar(name, key, item_type, i) for i in items)
    if len(items) != 1:
        raise PipelineError(f"pass {name} option '{key}' takes one {_what(kind)}, got "
                            f"{len(items)} values")
    return _scalar(name, key, kind, items[0])


def _what(kind: object) -> str:
    return {int: "integer", float: "number", bool: "true or false", str: "word"}.get(
        kind, str(kind))  # type: ignore[call-overload]


def _scalar(name: str, key: str, kind: object, item: str) -> object:
    try:
        if kind is bool:
            if item not in ("true", "false"):
                raise ValueError(item)
            return item == "true"
        if kind is int:
            return int(item)
        if kind is float:
            return float(item)
        if kind is str:
            return item
    except ValueError:
        raise PipelineError(f"pass {name} option '{key}' takes {_what(kind)}, got "
                            f"{item!r}") from None
    raise PipelineError(f"pass {name} option '{key}' is of a type pipelines cannot write "
                        f"({kind})")


def pass_text(p: object) -> str:
    """`p` as a pipeline element: its name and the options that differ from their defaults."""
    options = []
    for f in dataclasses.fields(p):  # type: ignore[arg-type]
        if not f.init:
            continue
        value = getattr(p, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue
        if f.default_factory is not dataclasses.MISSING and value == f.default_factory():
            continue
        options.append(f"{f.name}={_format(value)}")
    name: str = p.name  # type: ignore[attr-defined]
    return f"{name}{{{' '.join(options)}}}" if options else name


def _format(value: object) -> str:
    if isinstance(value, tuple):
        return ",".join(_format(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if _BARE.fullmatch(value) else json.dumps(value)
    return repr(value)
