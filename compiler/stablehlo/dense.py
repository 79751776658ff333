"""`dense<...>` literals as numpy arrays of an HLO shape.

Forms: a splat (``dense<1.0>``, ``dense<0xFF800000>`` the bits of one element,
``dense<true>``), nested lists (``dense<[[1, 2], [3, 4]]>``), and the hex string of the
whole little-endian buffer (``dense<"0x0000803F...">``, one element's bytes for a splat).
"""

from __future__ import annotations

import math
import re

import numpy as np

from nxcc.compiler.hlo.dtypes import numpy_dtype_of
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.ir.limits import oversize
from nxcc.ir.sharding_notation.cursor import PieceError

_VALUES = re.compile(r"[^\s\[\],]+")


def dense_array(body: str, shape: ArrayShape) -> np.ndarray:
    """The value of ``dense<body>`` as an array of `shape`; PieceError (offset in `body`)
    when it does not fit."""
    try:
        dtype = numpy_dtype_of(shape.dtype)
    except ValueError as exc:
        raise PieceError(str(exc), 0) from None
    problem = oversize(shape.dims, dtype.itemsize)  # before numpy allocates it
    if problem is not None:
        raise PieceError(f"a constant of {problem}", 0)
    n = math.prod(shape.dims)
    text = body.strip()
    if text.startswith('"'):
        return _hex_buffer(text, dtype, shape, n)
    if text.startswith("["):
        values = _VALUES.findall(text)
        if len(values) == 1 and n != 1:
            return np.full(shape.dims, _scalar(values[0], dtype), dtype)
        if len(values) != n:
            raise PieceError(f"expected {n} values for {shape}, found {len(values)}", 0)
        if dtype.kind == "b":
            flat = np.array([v == "true" for v in values], np.bool_)
        elif any(v.startswith(("0x", "-0x")) for v in values):
            flat = np.array([_scalar(v, dtype) for v in values], dtype)
        elif dtype.kind in "iu":
            flat = np.array([_fits(int(v), dtype) for v in values]).astype(dtype)
        else:
            flat = _floats(values, dtype)
        return flat.reshape(shape.dims)
    return np.full(shape.dims, _scalar(text, dtype), dtype)


def _floats(values: list[str], dtype: np.dtype) -> np.ndarray:
    try:
        return np.array(values).astype(np.float64).astype(dtype)
    except ValueError:
        bad = next(v for v in values if not _is_float(v))
        raise PieceError(f"expected a number, found {bad!r}", 0) from None


def _is_float(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True


def _scalar(text: str, dtype: np.dtype) -> object:
    """One element: true/false, a decimal number, or hex (the bits of a float)."""
    if dtype.kind == "b":
        if text not in ("true", "false", "0", "1"):
            raise PieceError(f"expected true or false, found {text!r}", 0)
        return text in ("true", "1")
    if text.startswith(("0x", "-0x")):
        bits = int(text, 16)
        if dtype.kind in "iu":
            return np.array(bits).astype(np.uint64).astype(dtype)[()]
        unsigned = np.dtype(f"u{dtype.itemsize}")
        if not 0 <= bits <= np.iinfo(unsigned).max:
            raise PieceError(f"{text} has more bits than {dtype}", 0)
        return np.array(bits, unsigned).view(dtype)[()]
    try:
        value = int(text) if dtype.kind in "iu" else float(text)
    except ValueError:
        raise PieceError(f"expected a {dtype} value, found {text!r}", 0) from None
    return _fits(value, dtype) if isinstance(value, int) else value


def _fits(value: int, dtype: np.dtype) -> int:
    info = np.iinfo(dtype)
    if not info.min <= value <= info.max:
        raise PieceError(f"{value} does not fit in {dtype}", 0)
    return value


def _hex_buffer(text: str, dtype: np.dtype, shape: ArrayShape, n: int) -> np.ndarray:
    raw = text.strip('"')
    if not raw.startswith("0x"):
        raise PieceError(f"expected a hex string like \"0x0000803F\", found {raw[:12]!r}", 0)
    try:
        data = bytes.fromhex(raw[2:])
    except ValueError:
        raise PieceError("expected hex digits in the dense string", 0) from None
    width = 1 if dtype.kind == "b" else dtype.itemsize
    if len(data) == width and n != 1:
        return np.full(shape.dims, np.frombuffer(data, dtype)[0], dtype)
    if len(data) != n * width:
        raise PieceError(f"expected {n * width} bytes for {shape}, found {len(data)}", 0)
    return np.frombuffer(data, dtype).reshape(shape.dims).copy()
