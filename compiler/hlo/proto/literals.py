"""LiteralProto -> the value of a constant, as numpy arrays of the IR's element types.

Each element type has its own field: ``preds``, the packed ``s32s``/``f32s``/... repeated
numbers, and byte strings for the narrow types (``s8s``, ``u8s``; ``f16s``, ``bf16s``,
``s16s``, ``u16s`` two little-endian bytes an element; the 8-, 4- and 2-bit types one byte an
element). The values are stored in the literal's layout (minor-to-major), so a non-default
layout is transposed back to the logical order. A tuple literal holds one literal per
element in ``tuple_literals``.
"""

from __future__ import annotations

import math

import numpy as np

from nxcc.compiler.hlo.dtypes import IR_TYPES, numpy_dtype_of
from nxcc.compiler.hlo.nodes import ArrayShape, Shape, TupleShape
from nxcc.compiler.hlo.proto.enums import PRIMITIVE_TYPES
from nxcc.compiler.hlo.proto.schema import HloMessage

# element type -> (field, numpy dtype the stored values have)
_REPEATED = {"pred": ("preds", np.bool_), "s32": ("s32s", np.int32),
             "s64": ("s64s", np.int64), "u32": ("u32s", np.uint32),
             "u64": ("u64s", np.uint64), "f32": ("f32s", np.float32),
             "f64": ("f64s", np.float64)}
_BYTES = {"s8": ("s8s", "i1"), "u8": ("u8s", "u1"), "s16": ("s16s", "<i2"),
          "u16": ("u16s", "<u2"), "f16": ("f16s", "<f2"), "bf16": ("bf16s", "<u2"),
          "s4": ("s4s", "i1"), "u4": ("u4s", "u1"), "s2": ("s2s", "i1"), "u2": ("u2s", "u1"),
          "f8e5m2": ("f8e5m2s", "u1"), "f8e4m3fn": ("f8e4m3fns", "u1"),
          "f8e4m3fnuz": ("f8e4m3fnuzs", "u1"), "f8e5m2fnuz": ("f8e5m2fnuzs", "u1"),
          "f8e8m0fnu": ("f8e8m0fnus", "u1"), "f4e2m1fn": ("f4e2m1fns", "u1")}
# stored as their bit patterns, viewed as the type itself
_BIT_VIEWS = {"bf16", "f8e5m2", "f8e4m3fn", "f8e4m3fnuz", "f8e5m2fnuz", "f8e8m0fnu",
              "f4e2m1fn"}


class LiteralError(ValueError):
    """A literal that does not hold the values its shape asks for."""


def supported(shape: Shape) -> bool:
    """Whether the IR can hold a constant of `shape` (else its value is not read, as for
    HLO text, and the lowering reports the element type)."""
    return all(leaf.dtype in IR_TYPES for leaf in shape.leaves())


def literal_value(lit: HloMessage, shape: Shape, depth: int = 0) -> np.ndarray | tuple:
    """The value of `lit` for a constant of `shape` (a tuple of values for a tuple)."""
    if isinstance(shape, TupleShape):
        if len(lit.tuple_literals) != len(shape.elements):
            raise LiteralError(f"expected a literal of {len(shape.elements)} elements for the "
                               f"tuple {shape}, found {len(lit.tuple_literals)}")
        return tuple(literal_value(e, s, depth + 1)
                     for e, s in zip(lit.tuple_literals, shape.elements, strict=True))
    return _array(lit, shape)


def _array(lit: HloMessage, shape: ArrayShape) -> np.ndarray:
    if lit.HasField("shape") and lit.shape.element_type:
        stored = PRIMITIVE_TYPES.get(lit.shape.element_type)
        if stored != shape.dtype or tuple(lit.shape.dimensions) != shape.dims:
            dims = ",".join(map(str, lit.shape.dimensions))
            raise LiteralError(f"expected a literal of {shape}, found one of {stored}[{dims}]")
    n = math.prod(shape.dims)
    flat = _flat(lit, shape.dtype)
    if flat.size != n:
        raise LiteralError(f"expected {n} values for {shape}, found {flat.size}")
    target = numpy_dtype_of(shape.dtype)
    if shape.dtype in _BIT_VIEWS:
        flat = flat.view(target)
    elif flat.dtype != target:
        flat = flat.astype(target)
    return _logical(flat, shape, lit)


def _flat(lit: HloMessage, dtype: str) -> np.ndarray:
    if dtype in _REPEATED:
        field, np_type = _REPEATED[dtype]
        return np.array(getattr(lit, field), dtype=np_type)
    field, code = _BYTES[dtype]
    data = getattr(lit, field)
    width = np.dtype(code).itemsize
    if len(data) % width:
        raise LiteralError(f"expected {dtype} values of {width} bytes each, found "
                           f"{len(data)} bytes")
    return np.frombuffer(data, dtype=code).copy()


def _logical(flat: np.ndarray, shape: ArrayShape, lit: HloMessage) -> np.ndarray:
    """The values in logical (row-major) order; they are stored in the literal's layout."""
    minor = list(lit.shape.layout.minor_to_major) if lit.HasField("shape") else []
    rank = len(shape.dims)
    if not minor or minor == list(range(rank - 1, -1, -1)):
        return flat.reshape(shape.dims)
    if sorted(minor) != list(range(rank)):
        raise LiteralError(f"expected a literal layout that permutes the {rank} dimensions, "
                           f"found {{{','.join(map(str, minor))}}}")
    major = minor[::-1]
    stored = flat.reshape([shape.dims[d] for d in major])
    return np.ascontiguousarray(stored.transpose(np.argsort(major)))

