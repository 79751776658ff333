"""MLIR types as HLO shapes: ``tensor<4x8xf32>`` -> ``f32[4,8]``, ``tensor<i1>`` ->
``pred[]``, ``!stablehlo.token`` -> ``token[]``, ``tuple<...>`` -> a tuple shape."""

from __future__ import annotations

from functools import lru_cache

from nxcc.compiler.hlo.dtypes import ir_dtype
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.ir.limits import oversize
from nxcc.ir.sharding_notation.cursor import PieceError

#: MLIR element type -> HLO element type name.
ELEMENT_TYPES: dict[str, str] = {
    "i1": "pred", "i2": "s2", "i4": "s4", "i8": "s8", "i16": "s16", "i32": "s32",
    "i64": "s64", "si8": "s8", "si16": "s16", "si32": "s32", "si64": "s64", "ui1": "u1",
    "ui2": "u2", "ui4": "u4", "ui8": "u8", "ui16": "u16", "ui32": "u32", "ui64": "u64",
    "f16": "f16", "bf16": "bf16", "f32": "f32", "f64": "f64", "index": "s64",
    "complex<f32>": "c64", "complex<f64>": "c128", "f8E4M3FN": "f8e4m3fn",
    "f8E5M2": "f8e5m2", "f8E4M3FNUZ": "f8e4m3fnuz", "f8E5M2FNUZ": "f8e5m2fnuz",
    "f8E4M3B11FNUZ": "f8e4m3b11fnuz", "f8E4M3": "f8e4m3", "f8E3M4": "f8e3m4",
    "f4E2M1FN": "f4e2m1fn", "f8E8M0FNU": "f8e8m0fnu",
}

TOKEN = ArrayShape("token", ())


@lru_cache(maxsize=4096)
def parse_type(text: str) -> ArrayShape:
    """The shape of one type token (``tensor<...>``, ``!stablehlo.token``) or a scalar
    element type (``f32``); PieceError (offset within `text`) when it is not one."""
    if text in ("!stablehlo.token", "!mhlo.token"):
        return TOKEN
    if text in ELEMENT_TYPES:
        return ArrayShape(ELEMENT_TYPES[text], ())
    if not text.startswith("tensor<") or not text.endswith(">"):
        raise PieceError(f"expected a tensor type, found {text!r}", 0)
    body = text[7:-1]
    if "," in body:
        raise PieceError(f"expected a tensor type without an encoding (bounded dynamic "
                         f"shapes are not supported), found {text!r}", 7)
    if "complex<" in body:
        head, _, rest = body.partition("complex<")
        dims = [d for d in head.split("x") if d]
        element = "complex<" + rest
    else:
        *dims, element = body.split("x")
    dtype = ELEMENT_TYPES.get(element.strip())
    if dtype is None:
        raise PieceError(f"expected an element type like f32, bf16, i32, i1 or ui8, found "
                         f"{element.strip()!r}", len(text) - 1 - len(element))
    try:
        shape = tuple(int(d) for d in dims)
    except ValueError:
        raise PieceError(f"expected static dimensions (dynamic shapes are not supported), "
                         f"found {text!r}", 7) from None
    ir = ir_dtype(dtype)
    problem = oversize(shape, ir.itemsize if ir is not None else 16)  # as HLO text's shapes
    if problem is not None:
        raise PieceError(f"{text}: {problem}", 7)
    return ArrayShape(dtype, shape)
