"""Elementwise opcodes: unary and binary arithmetic, compare, select, clamp, convert,
bitcast-convert, reduce-precision, and copy."""

from __future__ import annotations

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef

#: HLO opcode -> the unary core op it is (one line per op).
UNARY: dict[str, OpDef] = {
    "abs": ops.abs,
    "negate": ops.negate,
    "sign": ops.sign,
    "exponential": ops.exp,
    "exponential-minus-one": ops.expm1,
    "log": ops.log,
    "log-plus-one": ops.log1p,
    "sqrt": ops.sqrt,
    "rsqrt": ops.rsqrt,
    "cbrt": ops.cbrt,
    "tanh": ops.tanh,
    "logistic": ops.logistic,
    "sine": ops.sin,
    "cosine": ops.cos,
    "tan": ops.tan,
    "erf": ops.erf,
    "floor": ops.floor,
    "ceil": ops.ceil,
    "round-nearest-even": ops.round_even,
    "round-nearest-afz": ops.round_afz,
    "not": ops.not_,
    "popcnt": ops.popcnt,
    "count-leading-zeros": ops.clz,
    "is-finite": ops.is_finite,
}

#: HLO opcode -> the binary core op it is.
BINARY: dict[str, OpDef] = {
    "add": ops.add, "subtract": ops.subtract, "multiply": ops.multiply, "divide": ops.divide,
    "remainder": ops.remainder, "power": ops.power, "maximum": ops.maximum,
    "minimum": ops.minimum, "atan2": ops.atan2, "and": ops.and_, "or": ops.or_, "xor": ops.xor,
    "shift-left": ops.shift_left, "shift-right-arithmetic": ops.shift_right_arithmetic,
    "shift-right-logical": ops.shift_right_logical,
}


@converts(*UNARY)
def lower_unary(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    return cx.emit1(UNARY[cx.instr.opcode], [cx.value(0)])


@converts(*BINARY)
def lower_binary(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    return cx.emit1(BINARY[cx.instr.opcode], [cx.value(0), cx.value(1)])


@converts("copy")
def lower_copy(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    return cx.args[0]


_SIGNED = {1: DType.S8, 2: DType.S16, 4: DType.S32, 8: DType.S64}
_UNSIGNED = {1: DType.U8, 2: DType.U16, 4: DType.U32, 8: DType.U64}


def total_order_key(cx: InstrContext, x: Value) -> Value:
    """Signed integers ordered as XLA's TOTALORDER orders the floats `x`:
    -NaN < -inf < ... < -0 < +0 < ... < inf < NaN."""
    width = x.type.dtype.itemsize
    sdt = _SIGNED[width]
    bits = cx.emit1(ops.bitcast_convert, [x], {"dtype": sdt})
    t = bits.type
    negative = cx.emit1(ops.compare, [bits, cx.b.splat(0, t)], {"direction": "LT"})
    flipped = cx.emit1(ops.xor, [bits, cx.b.splat((1 << (8 * width - 1)) - 1, t)])
    return cx.emit1(ops.select, [negative, flipped, bits])


@converts("compare")
def lower_compare(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    a, b = cx.value(0), cx.value(1)
    direction = cx.attr("direction")
    kind = cx.attr("type", None)
    dt = a.type.dtype
    if kind == "TOTALORDER" and dt.is_float:
        a, b = total_order_key(cx, a), total_order_key(cx, b)
    elif kind == "UNSIGNED" and dt.is_signed_int:
        a = cx.emit1(ops.bitcast_convert, [a], {"dtype": _UNSIGNED[dt.itemsize]})
        b = cx.emit1(ops.bitcast_convert, [b], {"dtype": _UNSIGNED[dt.itemsize]})
    elif kind == "SIGNED" and dt.is_unsigned_int:
        a = cx.emit1(ops.bitcast_convert, [a], {"dtype": _SIGNED[dt.itemsize]})
        b = cx.emit1(ops.bitcast_convert, [b], {"dtype": _SIGNED[dt.itemsize]})
    return cx.emit1(ops.compare, [a, b], {"direction": direction})


@converts("select")
def lower_select(cx: InstrContext) -> Tree:
    cx.operand_count(3)
    return cx.emit1(ops.select, cx.values())


@converts("clamp")
def lower_clamp(cx: InstrContext) -> Tree:
    cx.operand_count(3)
    return cx.emit1(ops.clamp, cx.values())


@converts("convert")
def lower_convert(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    dt = cx.out_type.dtype
    return x if x.type.dtype is dt else cx.emit1(ops.convert, [x], {"dtype": dt})


@converts("bitcast-convert")
def lower_bitcast_convert(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    dt = cx.out_type.dtype
    return x if x.type.dtype is dt else cx.emit1(ops.bitcast_convert, [x], {"dtype": dt})


# (exponent_bits, mantissa_bits) -> the type whose rounding reduce-precision does.
_PRECISIONS = {(5, 10): DType.F16, (8, 7): DType.BF16, (8, 23): DType.F32,
               (11, 52): DType.F64}


@converts("reduce-precision")
def lower_reduce_precision(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    bits = (cx.attr("exponent_bits"), cx.attr("mantissa_bits"))
    narrow = _PRECISIONS.get(bits)  # type: ignore[arg-type]
    if narrow is None:
        raise cx.error(f"expected exponent_bits/mantissa_bits of f16, bf16, f32 or f64 "
                       f"(5/10, 8/7, 8/23, 11/52), found {bits[0]}/{bits[1]}",
                       E.UNSUPPORTED_FEATURE)
    if narrow.itemsize >= x.type.dtype.itemsize:
        return x
    return cx.emit1(ops.convert, [cx.emit1(ops.convert, [x], {"dtype": narrow})],
                    {"dtype": x.type.dtype})
