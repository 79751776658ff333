"""Generates `nxcc/ir/builder_ops.py`: one typed `Builder` method per core op.

    python -m nxcc.ir.gen_builder_ops          # rewrite ir/builder_ops.py
    python -m nxcc.ir.gen_builder_ops --check  # exit 1 if it is out of date

Each method takes the op's operands positionally and its attributes as keywords (required
ones without a default), and appends the op through `Builder.op`. A test checks that the
file in the repository is what `render()` produces, so adding an op and forgetting to
regenerate fails the tests.
"""

from __future__ import annotations

import keyword
import sys
from pathlib import Path

from nxcc.ir.attributes import AttrKind
from nxcc.ir.opdef import REQUIRED, AttrSpec, OpDef, all_opdefs

TARGET = Path(__file__).with_name("builder_ops.py")

#: ops whose Builder method is written by hand in `builder.py` (convenience signatures).
HANDWRITTEN = frozenset({"constant", "reshape", "convert"})

_HINTS = {
    AttrKind.INT: "int",
    AttrKind.INTS: "Sequence[int]",
    AttrKind.INTS2: "Sequence[Sequence[int]]",
    AttrKind.FLOAT: "float",
    AttrKind.BOOL: "bool",
    AttrKind.STR: "str",
    AttrKind.ENUM: "str",
    AttrKind.DTYPE: "DType | str",
    AttrKind.DENSE: "Dense",
    AttrKind.SYMBOL: "Symbol | str",
    AttrKind.SYMBOLS: "Sequence[Symbol | str]",
}

_OPERAND_NAMES = {0: (), 1: ("x",), 2: ("lhs", "rhs"), 3: ("x0", "x1", "x2")}

_HEADER = '''"""Typed `Builder` methods, one per core op.

GENERATED from the op definitions by `python -m nxcc.ir.gen_builder_ops`; do not edit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nxcc.ir import ops
from nxcc.ir.attributes import {attributes}
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef


class BuilderOps:
    """``b.<op>(*operands, **attributes)`` for every core op; returns the op's first result
    (use `Builder.ops` for every result of a multi-result op)."""

    if TYPE_CHECKING:

        def op(self, opcode: OpDef | str, operands: Sequence[Value],
               attrs: Mapping[str, object] | None = None) -> Value: ...
'''


def python_name(opdef: OpDef) -> str:
    """The attribute of `nxcc.ir.ops` (and method of Builder) naming `opdef`."""
    return opdef.name + "_" if keyword.iskeyword(opdef.name) else opdef.name


def _param(name: str, spec: AttrSpec) -> str:
    hint = _HINTS[spec.kind]
    if spec.default is REQUIRED:
        return f"{name}: {hint}"
    if spec.default is None:
        return f"{name}: {hint} | None = None"
    return f"{name}: {hint} = {spec.default!r}"


def _method(opdef: OpDef) -> str:
    name = python_name(opdef)
    if opdef.operands is None:
        params, operands = ["*operands: Value"], "operands"
    else:
        names = _OPERAND_NAMES[opdef.operands]
        params = [f"{n}: Value" for n in names] + (["/"] if names else [])
        operands = "[" + ", ".join(names) + "]"
    if opdef.attrs:
        if opdef.operands is not None:
            params.append("*")
        params += [_param(k, spec) for k, spec in opdef.attrs.items()]
    attrs = ", ".join(f'"{k}": {k}' for k in opdef.attrs)
    doc = opdef.doc or f"The {opdef.name} op."
    enums = [f"{k}: {' | '.join(s.choices)}" for k, s in opdef.attrs.items() if s.choices]
    if enums:
        doc = f"{doc.rstrip('.')} ({'; '.join(enums)})."
    lines = [f"    def {name}(self, {', '.join(params)}) -> Value:" if params
             else f"    def {name}(self) -> Value:",
             f'        """{doc}"""',
             f"        return self.op(ops.{name}, {operands}, {{{attrs}}})"]
    return "\n".join(_wrap(line) for line in lines)


def _wrap(line: str, width: int = 100) -> str:
    """Break a long `def` or `return` line after commas, continuation indented by 8."""
    if len(line) <= width:
        return line
    indent = " " * (len(line) - len(line.lstrip()) + 8)
    parts, current = [], ""
    for piece in line.split(", "):
        candidate = f"{current}, {piece}" if current else piece
        if len(candidate) + 1 > width and current:
            parts.append(current + ",")
            current = indent + piece
        else:
            current = candidate
    parts.append(current)
    return "\n".join(parts)


def render() -> str:
    """The text of builder_ops.py for the current op definitions."""
    defs = [d for d in sorted(all_opdefs(), key=python_name) if d.name not in HANDWRITTEN]
    kinds = {spec.kind for d in defs for spec in d.attrs.values()}
    attributes = [name for name, used in (
        ("Dense", AttrKind.DENSE in kinds),
        ("Symbol", bool(kinds & {AttrKind.SYMBOL, AttrKind.SYMBOLS}))) if used]
    header = _HEADER.replace("{attributes}", ", ".join(attributes))
    return header + "\n" + "\n\n".join(_method(d) for d in defs) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET} is out of date: run python -m nxcc.ir.gen_builder_ops")
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
