"""Elementwise ops: unary, binary, compare, select, clamp, convert, bitcast_convert.

Operands of binary ops have identical types (broadcasting is explicit, via
broadcast_in_dim, as in HLO).
"""

from __future__ import annotations

from collections.abc import Mapping

from nxcc.ir.attributes import AttrKind, AttrValue
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_dtype, fail, same_types
from nxcc.ir.types import TensorType

# unary op -> allowed element kinds ('' means any)
UNARY_OPS: dict[str, str] = {
    "abs": "signed",
    "negate": "signed|int",
    "sign": "signed|int",
    "exp": "float",
    "expm1": "float",
    "log": "float",
    "log1p": "float",
    "sqrt": "float",
    "rsqrt": "float",
    "cbrt": "float",
    "tanh": "float",
    "logistic": "float",
    "sin": "float",
    "cos": "float",
    "tan": "float",
    "erf": "float",
    "floor": "float",
    "ceil": "float",
    "round_even": "float",
    "round_afz": "float",
    "not": "pred|int",
    "popcnt": "int",
    "clz": "int",
}

# binary op -> allowed element kinds
BINARY_OPS: dict[str, str] = {
    "add": "float|int|pred",
    "subtract": "float|int",
    "multiply": "float|int|pred",
    "divide": "float|int",
    "remainder": "float|int",
    "power": "float|int",
    "maximum": "float|int|pred",
    "minimum": "float|int|pred",
    "atan2": "float",
    "and": "pred|int",
    "or": "pred|int",
    "xor": "pred|int",
    "shift_left": "int",
    "shift_right_arithmetic": "int",
    "shift_right_logical": "int",
}

COMPARISON_DIRECTIONS = ("EQ", "NE", "LT", "LE", "GT", "GE")


def _unary_rule(name: str, allowed: str):
    def rule(ts: list[TensorType], attrs: Mapping[str, AttrValue], module) -> list[TensorType]:
        check_dtype(name, ts[0], allowed)
        return [ts[0]]

    return rule


def _binary_rule(name: str, allowed: str):
    def rule(ts: list[TensorType], attrs: Mapping[str, AttrValue], module) -> list[TensorType]:
        t = same_types(name, ts)
        check_dtype(name, t, allowed)
        return [t]

    return rule


for _name, _allowed in UNARY_OPS.items():
    define(OpDef(_name, _unary_rule(_name, _allowed), operands=1, elementwise=True))

for _name, _allowed in BINARY_OPS.items():
    define(OpDef(_name, _binary_rule(_name, _allowed), operands=2, elementwise=True))


def _is_finite(ts, attrs, module):
    check_dtype("is_finite", ts[0], "float")
    return [ts[0].with_dtype(DType.PRED)]


define(OpDef("is_finite", _is_finite, operands=1, elementwise=True))


def _compare(ts, attrs, module):
    t = same_types("compare", ts)
    return [t.with_dtype(DType.PRED)]


define(
    OpDef(
        "compare",
        _compare,
        attrs={"direction": AttrSpec(AttrKind.ENUM, choices=COMPARISON_DIRECTIONS)},
        operands=2,
        elementwise=True,
        doc="Elementwise comparison; NaN compares unequal (IEEE, like HLO's FLOAT type).",
    )
)


def _select(ts, attrs, module):
    pred, on_true, on_false = ts
    if pred.dtype is not DType.PRED:
        raise fail(f"select: predicate must be pred, got {pred}")
    t = same_types("select", [on_true, on_false])
    if pred.rank != 0 and pred.shape != t.shape:
        raise fail(f"select: predicate {pred} must be a scalar or have shape of {t}")
    return [t]


define(OpDef("select", _select, operands=3, elementwise=True))


def _clamp(ts, attrs, module):
    lo, x, hi = ts
    for what, b in (("min", lo), ("max", hi)):
        if b.dtype != x.dtype or (b.rank != 0 and b.shape != x.shape):
            raise fail(f"clamp: {what} {b} must be a scalar or match operand {x}")
    return [x]


define(OpDef("clamp", _clamp, operands=3, elementwise=True, doc="clamp(min, x, max)"))


def _convert(ts, attrs, module):
    return [ts[0].with_dtype(attrs["dtype"])]  # type: ignore[arg-type]


define(
    OpDef(
        "convert",
        _convert,
        attrs={"dtype": AttrSpec(AttrKind.DTYPE)},
        operands=1,
        elementwise=True,
        doc="Element type conversion; float->int truncates toward zero, ->pred is x != 0.",
    )
)


def _bitcast_convert(ts, attrs, module):
    src = ts[0]
    dst: DType = attrs["dtype"]  # type: ignore[assignment]
    a, b = src.dtype.itemsize, dst.itemsize
    if a == b:
        return [src.with_dtype(dst)]
    if a > b:
        return [TensorType(dst, (*src.shape, a // b))]
    if src.rank == 0 or src.shape[-1] != b // a:
        raise fail(f"bitcast_convert: {src} to {dst} needs a last dimension of {b // a}")
    return [TensorType(dst, src.shape[:-1])]


define(
    OpDef(
        "bitcast_convert",
        _bitcast_convert,
        attrs={"dtype": AttrSpec(AttrKind.DTYPE)},
        operands=1,
        doc="Reinterpret bits; a size change adds or removes a minor dimension (as in HLO).",
    )
)
