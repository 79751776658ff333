"""The IR's text form, printer side. `ir.parser` reads back exactly what this prints.

    module @mlp {
      func @main(%x: f32[4,16]) -> ("y": f32[4,10]) {
        %w = constant() {value = dense<f32[16,10]: 0x...>} : f32[16,10]
        %0 = dot_general(%x, %w) {lhs_contracting_dims = [1], rhs_contracting_dims = [0]} ...
        return %0
      }
    }

Attributes print in the order the op definition declares them, defaults omitted.
"""

from __future__ import annotations

import json
import re

import numpy as np

from nxcc.ir.attributes import AttrKind, AttrValue, Dense, Symbol
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType

_BARE_NAME = re.compile(r"[A-Za-z0-9_.$\-]+\Z")
DENSE_INLINE_LIMIT = 16


def quote_name(name: str) -> str:
    """`name` bare when it is a plain identifier, else as a JSON string."""
    return name if _BARE_NAME.match(name) else json.dumps(name)


def format_scalar(value: object, dtype: DType) -> str:
    if dtype is DType.PRED:
        return "true" if bool(value) else "false"
    if dtype.is_float:
        return repr(float(value))  # type: ignore[arg-type]
    return str(int(value))  # type: ignore[call-overload]


def format_dense(d: Dense, elide_over: int | None = None) -> str:
    """`dense<TYPE: body>`: `splat<...>` for one repeated value, a list when small, else hex."""
    t = d.type
    if d.is_splat and t.size > 0:
        return f"splat<{t}: {format_scalar(d.splat_value, t.dtype)}>"
    if elide_over is not None and t.size > elide_over:
        return f"dense<{t}: ...>"
    if t.size <= DENSE_INLINE_LIMIT:
        body = ", ".join(format_scalar(v, t.dtype) for v in d.array.reshape(-1).tolist())
        return f"dense<{t}: [{body}]>"
    data = np.ascontiguousarray(d.array).astype(d.array.dtype.newbyteorder("<"), copy=False)
    return f"dense<{t}: 0x{data.tobytes().hex()}>"


def format_attr(value: AttrValue, elide_over: int | None = None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, DType):
        return value.value
    if isinstance(value, Symbol):
        return "@" + quote_name(value.name)
    if isinstance(value, Dense):
        return format_dense(value, elide_over)
    if isinstance(value, tuple):
        return "[" + ", ".join(format_attr(v, elide_over) for v in value) + "]"
    raise TypeError(f"cannot print attribute value {value!r}")


class Printer:
    """Prints a module; names values from their `name` or by counting, always uniquely."""

    def __init__(self, elide_constants_over: int | None = None) -> None:
        self.elide_over = elide_constants_over

    def module(self, module: Module) -> str:
        head = f"module @{quote_name(module.name)}"
        if module.entry != "main":
            head += f" entry @{quote_name(module.entry)}"
        lines = [head + " {"]
        for fn in module.functions.values():
            lines.extend("  " + line for line in self.function(fn))
        lines.append("}")
        return "\n".join(lines) + "\n"

    def function(self, fn: Function) -> list[str]:
        names: dict[int, str] = {}
        used: set[str] = set()
        counter = [0]

        def name_of(v: Value) -> str:
            key = id(v)
            if key not in names:
                base = v.name
                if base is None or base in used:
                    base = _fresh(base, used, counter)
                used.add(base)
                names[key] = "%" + quote_name(base)
            return names[key]

        params = ", ".join(f"{name_of(p)}: {typed(p)}" for p in fn.params)
        rnames: list[str | None] = [*fn.result_names] or [None] * len(fn.results)
        rtypes = ", ".join(
            (f"{json.dumps(n)}: " if n is not None else "") + str(r.type)
            for n, r in zip(rnames, fn.results, strict=True)
        )
        lines = [f"func @{quote_name(fn.name)}({params}) -> ({rtypes}) {{"]
        for op in fn.body:
            lines.append("  " + self.op(op, name_of))
        ret = ", ".join(name_of(r) for r in fn.results)
        lines.append(f"  return {ret}".rstrip())
        lines.append("}")
        return lines

    def op(self, op: Op, name_of) -> str:
        operands = ", ".join(name_of(v) for v in op.operands)
        text = f"{op.opcode}({operands})"
        attrs = self.attrs(op)
        if attrs:
            text += " {" + attrs + "}"
        if op.results:
            lhs = ", ".join(name_of(r) for r in op.results)
            types = ", ".join(typed(r) for r in op.results)
            text = f"{lhs} = {text} : {types}"
        return text

    def attrs(self, op: Op) -> str:
        spec = op.opdef.attrs
        parts = []
        for key, value in op.attrs.items():
            if key in spec and spec[key].default is not None and value == spec[key].default:
                continue
            if value is None:
                continue
            if key in spec and spec[key].kind is AttrKind.ENUM:
                parts.append(f"{key} = {value}")  # enum values print bare
                continue
            parts.append(f"{key} = {format_attr(value, self.elide_over)}")
        return ", ".join(parts)


def typed(v: Value) -> str:
    """`v`'s type, followed by its sharding when it has one (``f32[8,4] sharding<[2,1]>``)."""
    return str(v.type) if v.sharding is None else f"{v.type} {v.sharding}"


def _fresh(base: str | None, used: set[str], counter: list[int]) -> str:
    if base is not None:
        n = 1
        while f"{base}.{n}" in used:
            n += 1
        return f"{base}.{n}"
    while str(counter[0]) in used:
        counter[0] += 1
    name = str(counter[0])
    counter[0] += 1
    return name


def print_module(module: Module, elide_constants_over: int | None = None) -> str:
    """The text form of `module`; constants above the limit print as `...` (not parseable)."""
    return Printer(elide_constants_over).module(module)
