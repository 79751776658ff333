"""Bit-level operators: BitShift and BitCast."""

from __future__ import annotations

from nxcc.compiler.onnx.context import NodeContext, binary
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value


@converts("BitShift")
def convert_bitshift(ctx: NodeContext) -> list[Value]:
    """BitShift on unsigned integers: LEFT is shift_left, RIGHT shift_right_logical (a
    shift by the bit width or more gives 0, as HLO and ONNX agree)."""
    x, y = ctx.input(0), ctx.input(1)
    if not (x.type.dtype.is_integer and y.type.dtype is x.type.dtype):
        raise ctx.fail(f"expects two integer inputs of one type, got {x.type} and {y.type}")
    direction = ctx.attr("direction", "")
    if direction not in ("LEFT", "RIGHT"):
        raise ctx.fail(f"direction must be LEFT or RIGHT, got {direction!r}")
    opcode = "shift_left" if direction == "LEFT" else (
        "shift_right_logical" if x.type.dtype.is_unsigned_int else "shift_right_arithmetic")
    return [binary(ctx.b, opcode, x, y, ctx)]


@converts("BitCast")
def convert_bitcast(ctx: NodeContext) -> list[Value]:
    """BitCast to a type of the same width: the bits reinterpreted (bitcast_convert)."""
    x = ctx.input(0)
    to = to_ir_dtype(int(ctx.attr("to")), f"output '{ctx.node.output[0]}' of BitCast")
    if to.itemsize != x.type.dtype.itemsize:
        raise ctx.fail(f"cannot reinterpret {x.type.dtype} as {to}: the widths differ")
    if to is x.type.dtype:
        return [x]
    return [ctx.b.op(ops.bitcast_convert, [x], {"dtype": to})]
