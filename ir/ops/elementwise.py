"""Elementwise ops: unary, binary, compare, select, clamp, convert, bitcast_convert.

Operands of binary ops have identical types (broadcasting is explicit, via
broadcast_in_dim, as in HLO). Each unary and binary op is one `ElementwiseDef` line: its
allowed element kinds, its numpy function (on compute-dtype arrays) and whether floats are
evaluated in float64 (`precise`); its kernel, sharding rule and FLOP count follow from it.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from nxcc.ir.attributes import AttrKind, AttrValue
from nxcc.ir.dtypes import DType
from nxcc.ir.kernels import integer
from nxcc.ir.kernels import unary as u
from nxcc.ir.kernels.binary import by_kind, shifter
from nxcc.ir.opdef import AttrSpec, ElementFn, ElementwiseDef, OpDef, define
from nxcc.ir.ops._rules import check_dtype, fail, same_types
from nxcc.ir.types import TensorType

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


def unary(name: str, kinds: str, fn: ElementFn, precise: bool = False,
          float32_native: bool = False) -> ElementwiseDef:
    """Define the unary elementwise op `name` on elements of `kinds`, computed by `fn`."""
    return define(ElementwiseDef(name, _unary_rule(name, kinds), operands=1, elementwise=True,
                                 kinds=kinds, fn=fn, precise=precise,
                                 float32_native=float32_native))


def binary(name: str, kinds: str, fn: ElementFn, precise: bool = False) -> ElementwiseDef:
    """Define the binary elementwise op `name` on two operands of one type of `kinds`."""
    return define(ElementwiseDef(name, _binary_rule(name, kinds), operands=2, elementwise=True,
                                 kinds=kinds, fn=fn, precise=precise))


# Unary ops: name, allowed element kinds, numpy function; precise = evaluated in float64,
# float32_native = but float32 by numpy's float32 loop (`nxcc.ir.kernels.unary`).
abs = unary("abs", "signed", np.abs)
negate = unary("negate", "signed|int", np.negative)
sign = unary("sign", "signed|int", u.sign)
exp = unary("exp", "float", np.exp, precise=True, float32_native=True)
expm1 = unary("expm1", "float", np.expm1, precise=True)
log = unary("log", "float", np.log, precise=True, float32_native=True)
log1p = unary("log1p", "float", np.log1p, precise=True)
sqrt = unary("sqrt", "float", np.sqrt)  # IEEE sqrt is correctly rounded in every precision
rsqrt = unary("rsqrt", "float", u.rsqrt, precise=True)
cbrt = unary("cbrt", "float", np.cbrt, precise=True)
tanh = unary("tanh", "float", np.tanh, precise=True, float32_native=True)
logistic = unary("logistic", "float", u.logistic, precise=True)
sin = unary("sin", "float", np.sin, precise=True)
cos = unary("cos", "float", np.cos, precise=True)
tan = unary("tan", "float", np.tan, precise=True)
atan = unary("atan", "float", np.arctan, precise=True)
erf = unary("erf", "float", u.erf, precise=True)
floor = unary("floor", "float", np.floor)
ceil = unary("ceil", "float", np.ceil)
round_even = unary("round_even", "float", np.rint)
round_afz = unary("round_afz", "float", u.round_afz)
not_ = unary("not", "pred|int", u.logical_not)
popcnt = unary("popcnt", "int", integer.popcnt)
clz = unary("clz", "int", integer.clz)

# Binary ops.
add = binary("add", "float|int|pred", np.add)
subtract = binary("subtract", "float|int", np.subtract)
multiply = binary("multiply", "float|int|pred", np.multiply)
divide = binary("divide", "float|int", by_kind(np.divide, integer.divide))
remainder = binary("remainder", "float|int", by_kind(np.fmod, integer.remainder))
power = binary("power", "float|int", by_kind(np.power, integer.power), precise=True)
maximum = binary("maximum", "float|int|pred", np.maximum)
minimum = binary("minimum", "float|int|pred", np.minimum)
atan2 = binary("atan2", "float", np.arctan2, precise=True)
and_ = binary("and", "pred|int", np.bitwise_and)
or_ = binary("or", "pred|int", np.bitwise_or)
xor = binary("xor", "pred|int", np.bitwise_xor)
shift_left = binary("shift_left", "int", shifter("left"))
shift_right_arithmetic = binary("shift_right_arithmetic", "int", shifter("right_arithmetic"))
shift_right_logical = binary("shift_right_logical", "int", shifter("right_logical"))


def _is_finite(ts, attrs, module):
    check_dtype("is_finite", ts[0], "float")
    return [ts[0].with_dtype(DType.PRED)]


is_finite = define(OpDef("is_finite", _is_finite, operands=1, elementwise=True))


def _compare(ts, attrs, module):
    t = same_types("compare", ts)
    return [t.with_dtype(DType.PRED)]


compare = define(
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


select = define(OpDef("select", _select, operands=3, elementwise=True))


def _clamp(ts, attrs, module):
    lo, x, hi = ts
    for what, b in (("min", lo), ("max", hi)):
        if b.dtype != x.dtype or (b.rank != 0 and b.shape != x.shape):
            raise fail(f"clamp: {what} {b} must be a scalar or match operand {x}")
    return [x]


clamp = define(OpDef("clamp", _clamp, operands=3, elementwise=True, doc="clamp(min, x, max)"))


def _convert(ts, attrs, module):
    return [ts[0].with_dtype(attrs["dtype"])]


convert = define(
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
    dst: DType = attrs["dtype"]
    a, b = src.dtype.itemsize, dst.itemsize
    if a == b:
        return [src.with_dtype(dst)]
    if a > b:
        return [TensorType(dst, (*src.shape, a // b))]
    if src.rank == 0 or src.shape[-1] != b // a:
        raise fail(f"bitcast_convert: {src} to {dst} needs a last dimension of {b // a}")
    return [TensorType(dst, src.shape[:-1])]


bitcast_convert = define(
    OpDef(
        "bitcast_convert",
        _bitcast_convert,
        attrs={"dtype": AttrSpec(AttrKind.DTYPE)},
        operands=1,
        doc="Reinterpret bits; a size change adds or removes a minor dimension (as in HLO).",
    )
)
