"""Data movement ops: broadcast_in_dim, reshape, transpose, slice, pad, concatenate,
reverse, iota, constant."""

from __future__ import annotations

import math

from nxcc.ir.attributes import AttrKind, Dense
from nxcc.ir.opdef import OpDef, attr_specs, define
from nxcc.ir.ops._rules import check_dims, check_scalar, fail, same_types
from nxcc.ir.types import TensorType

INTS = AttrKind.INTS


def _broadcast_in_dim(ts, attrs, module):
    src = ts[0]
    shape: tuple[int, ...] = attrs["shape"]
    dims: tuple[int, ...] = attrs["broadcast_dimensions"]
    if len(dims) != src.rank:
        raise fail(f"broadcast_in_dim: {len(dims)} broadcast_dimensions for operand {src}")
    check_dims("broadcast_in_dim", "broadcast dimension", dims, len(shape))
    if list(dims) != sorted(dims):
        raise fail(f"broadcast_in_dim: broadcast_dimensions {list(dims)} must increase")
    for i, d in enumerate(dims):
        if src.shape[i] not in (1, shape[d]):
            raise fail(
                f"broadcast_in_dim: operand dimension {i} of size {src.shape[i]} cannot "
                f"broadcast to size {shape[d]}"
            )
    return [TensorType(src.dtype, shape)]


broadcast_in_dim = define(OpDef(
    "broadcast_in_dim", _broadcast_in_dim, attrs=attr_specs(shape=INTS, broadcast_dimensions=INTS),
    operands=1, doc="Operand dim i maps to result dim broadcast_dimensions[i] (size equal or 1)."))


def _reshape(ts, attrs, module):
    src = ts[0]
    shape: tuple[int, ...] = attrs["shape"]
    if math.prod(shape) != src.size:
        raise fail(f"reshape: cannot reshape {src} ({src.size} elements) to {list(shape)}")
    return [TensorType(src.dtype, shape)]


reshape = define(OpDef("reshape", _reshape, attrs=attr_specs(shape=INTS), operands=1,
                       doc="Row-major reshape to `shape`."))


def _transpose(ts, attrs, module):
    src = ts[0]
    perm: tuple[int, ...] = attrs["permutation"]
    if sorted(perm) != list(range(src.rank)):
        raise fail(f"transpose: permutation {list(perm)} is not a permutation of rank {src.rank}")
    return [TensorType(src.dtype, tuple(src.shape[p] for p in perm))]


transpose = define(OpDef("transpose", _transpose, attrs=attr_specs(permutation=INTS),
                         operands=1, doc="Result dim i is operand dim permutation[i]."))


def _slice(ts, attrs, module):
    src = ts[0]
    start, limit, strides = attrs["start_indices"], attrs["limit_indices"], attrs["strides"]
    if not len(start) == len(limit) == len(strides) == src.rank:
        raise fail(f"slice: start/limit/strides must each have {src.rank} entries for {src}")
    out = []
    for d, (a, b, s) in enumerate(zip(start, limit, strides, strict=True)):
        if s < 1 or not 0 <= a <= b <= src.shape[d]:
            raise fail(f"slice: dimension {d}: [{a}:{b}:{s}] is invalid for size {src.shape[d]}")
        out.append((b - a + s - 1) // s)
    return [TensorType(src.dtype, tuple(out))]


slice = define(OpDef("slice", _slice, operands=1, attrs=attr_specs(
    start_indices=INTS, limit_indices=INTS, strides=INTS)))


def _pad(ts, attrs, module):
    src, value = ts
    check_scalar("pad", "padding value", value)
    if value.dtype != src.dtype:
        raise fail(f"pad: padding value {value} must have element type {src.dtype}")
    lo, hi, interior = attrs["low"], attrs["high"], attrs["interior"]
    if not len(lo) == len(hi) == len(interior) == src.rank:
        raise fail(f"pad: low/high/interior must each have {src.rank} entries for {src}")
    out = []
    for d, n in enumerate(src.shape):
        if interior[d] < 0:
            raise fail(f"pad: interior padding {interior[d]} must be >= 0")
        size = lo[d] + hi[d] + n + max(n - 1, 0) * interior[d]
        if size < 0:
            raise fail(f"pad: dimension {d} would have negative size {size}")
        out.append(size)
    return [TensorType(src.dtype, tuple(out))]


pad = define(OpDef("pad", _pad, attrs=attr_specs(low=INTS, high=INTS, interior=INTS), operands=2,
                   doc="pad(x, value): low/high may be negative (cropping), as in HLO."))


def _concatenate(ts, attrs, module):
    dim: int = attrs["dimension"]
    first = ts[0]
    check_dims("concatenate", "dimension", [dim], first.rank)
    total = 0
    for i, t in enumerate(ts):
        if t.dtype != first.dtype or t.rank != first.rank or any(
            a != b for k, (a, b) in enumerate(zip(t.shape, first.shape, strict=True)) if k != dim
        ):
            raise fail(f"concatenate: operand {i} is {t}, incompatible with {first} on dim {dim}")
        total += t.shape[dim]
    shape = list(first.shape)
    shape[dim] = total
    return [first.with_shape(shape)]


concatenate = define(OpDef("concatenate", _concatenate, attrs=attr_specs(dimension=AttrKind.INT),
                           operands=None, min_operands=1))


def _reverse(ts, attrs, module):
    check_dims("reverse", "dimension", attrs["dimensions"], ts[0].rank)
    return [ts[0]]


reverse = define(OpDef("reverse", _reverse, attrs=attr_specs(dimensions=INTS), operands=1))


def _iota(ts, attrs, module):
    shape = attrs["shape"]
    check_dims("iota", "dimension", [attrs["dimension"]], len(shape))
    return [TensorType(attrs["dtype"], shape)]


iota = define(OpDef(
    "iota", _iota, attrs=attr_specs(dtype=AttrKind.DTYPE, shape=INTS, dimension=AttrKind.INT),
    operands=0, doc="Counts 0, 1, ... along `dimension`."))


def _constant(ts, attrs, module):
    value: Dense = attrs["value"]
    return [value.type]


constant = define(OpDef("constant", _constant, attrs=attr_specs(value=AttrKind.DENSE), operands=0))


def _copy(ts, attrs, module):
    return [same_types("copy", ts)]


copy = define(OpDef("copy", _copy, operands=1, elementwise=True, doc="Identity (a fresh buffer)."))
