"""Cast and CastLike, with ONNX's casting rules.

- float -> int truncates toward zero, anything -> bool is x != 0 (the IR's convert);
- to an 8-bit float (e4m3fn, e4m3fnuz, e5m2, e5m2fnuz) with ``saturate=1`` (the default),
  values beyond the type's range become its largest finite value (NaN stays NaN); with
  ``saturate=0`` they become inf or NaN (the plain conversion, round to nearest even);
- to float8e8m0 (a power-of-two exponent) the float32 exponent is taken and rounded per
  ``round_mode`` (up, the default: any fraction rounds up; down; nearest), saturating at
  the largest exponent unless ``saturate=0``, as `onnx.numpy_helper.to_float8e8m0`;
- to 4- and 2-bit integers values wrap (numpy/ml_dtypes conversion), as the ONNX reference.
"""

from __future__ import annotations

import ml_dtypes

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.dtypes import to_ir_dtype
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType

SATURATING_F8 = frozenset({DType.F8E4M3FN, DType.F8E4M3FNUZ, DType.F8E5M2, DType.F8E5M2FNUZ})


@converts("Cast")
def convert_cast(ctx: NodeContext) -> list[Value]:
    to = to_ir_dtype(int(ctx.attr("to")), f"output '{ctx.node.output[0]}' of Cast")
    return [cast(ctx, ctx.input(0), to)]


@converts("CastLike")
def convert_cast_like(ctx: NodeContext) -> list[Value]:
    return [cast(ctx, ctx.input(0), ctx.input(1).type.dtype)]


def cast(ctx: NodeContext, x: Value, to: DType) -> Value:
    """`x` cast to `to` under the node's ``saturate`` and ``round_mode`` attributes."""
    b = ctx.b
    if x.type.dtype is to:
        return x
    saturate = bool(ctx.attr("saturate", 1))
    if to is DType.F8E8M0FNU:
        return _to_e8m0(b, x, saturate, str(ctx.attr("round_mode", "up")), ctx)
    if to in SATURATING_F8 and saturate and x.type.dtype not in (DType.PRED,):
        return saturate_to(b, x, to)
    return b.convert(x, to)


def saturate_to(b: Builder, x: Value, to: DType) -> Value:
    """`x` converted to float type `to`, clamped to its finite range first (NaN kept)."""
    wide = DType.F64 if x.type.dtype is DType.F64 else DType.F32
    w = b.convert(x, wide)
    top = float(ml_dtypes.finfo(to.numpy).max)
    w = b.minimum(b.maximum(w, splat_like(b, -top, w)), splat_like(b, top, w))
    return b.convert(w, to)


def _to_e8m0(b: Builder, x: Value, saturate: bool, mode: str, ctx: NodeContext) -> Value:
    """The float32 exponent of `x`, rounded per `mode`, as float8e8m0 bits."""
    if mode not in ("up", "down", "nearest"):
        raise ctx.fail(f"round_mode must be up, down or nearest, got {mode!r}")
    bits = b.op(ops.bitcast_convert, [b.convert(x, DType.F32)], {"dtype": DType.U32})

    def k(v: int) -> Value:
        return splat_like(b, v, bits)

    def has(mask: int) -> Value:
        return b.compare(b.op(ops.and_, [bits, k(mask)]), k(0), direction="NE")

    exp = b.op(ops.and_, [b.shift_right_logical(bits, k(23)), k(0xFF)])
    special = b.compare(exp, k(0xFF), direction="EQ")
    if mode == "down":
        up = None
    elif mode == "up":
        up = b.op(ops.and_, [has(0x7FFFFF), b.op(ops.not_, [special])])
    else:
        low = b.compare(exp, k(0), direction="GT")
        rest = b.op(ops.or_, [b.op(ops.or_, [has(0x200000), has(0x1FFFFF)]), low])
        up = b.op(ops.and_, [b.op(ops.and_, [has(0x400000), rest]), b.op(ops.not_, [special])])
    if up is not None:
        if saturate:
            up = b.op(ops.and_, [up, b.compare(exp, k(0xFE), direction="NE")])
        exp = b.add(exp, b.convert(up, DType.U32))
    exp = b.select(special, k(0xFF), exp)
    byte = b.convert(b.op(ops.and_, [exp, k(0xFF)]), DType.U8)
    return b.op(ops.bitcast_convert, [byte], {"dtype": DType.F8E8M0FNU})
