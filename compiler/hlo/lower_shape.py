"""Data-movement opcodes: broadcast, reshape, bitcast, transpose, slice, dynamic-slice,
dynamic-update-slice, pad, concatenate, reverse, iota, constant, get-dimension-size."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.context import InstrContext, Tree
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.attributes import Dense
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


@converts("broadcast")
def lower_broadcast(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    dims = cx.attr_as("dimensions", tuple)
    out = cx.out_type
    if len(dims) != x.type.rank:
        raise cx.attr_error("dimensions", f"expected {x.type.rank} broadcast dimensions for "
                            f"operand {x.type}, found {len(dims)}")
    order = sorted(range(len(dims)), key=lambda i: dims[i])
    if order != list(range(len(dims))):
        x = cx.emit1(ops.transpose, [x], {"permutation": tuple(order)})
        dims = tuple(dims[i] for i in order)
    if x.type.shape == out.shape and dims == tuple(range(len(dims))):
        return x
    return cx.emit1(ops.broadcast_in_dim, [x], {"shape": out.shape, "broadcast_dimensions": dims})


@converts("reshape")
def lower_reshape(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    shape = cx.out_type.shape
    return x if x.type.shape == shape else cx.emit1(ops.reshape, [x], {"shape": shape})


def _major_to_minor(shape: ArrayShape) -> list[int]:
    rank = len(shape.dims)
    if not shape.layout:
        return list(range(rank))
    return list(reversed(shape.layout))


@converts("bitcast")
def lower_bitcast(cx: InstrContext) -> Tree:
    """A bitcast reinterprets the buffer: logical order follows both layouts."""
    cx.operand_count(1)
    x = cx.value(0)
    src = cx.arg_shapes[0]
    dst = cx.instr.shape
    tiled = [s for s in (src, dst) if isinstance(s, ArrayShape) and "T(" in s.layout_extra]
    if tiled and (src.dims, src.layout) != (dst.dims, dst.layout):  # type: ignore[union-attr]
        raise cx.error(f"expected a bitcast between untiled layouts, found the tiled layout "
                       f"{{{tiled[0].layout_extra}}}", E.UNSUPPORTED_FEATURE)
    src_layout = _major_to_minor(src)  # type: ignore[arg-type]
    out = cx.out_type
    if out.dtype.itemsize != x.type.dtype.itemsize:
        raise cx.error(f"expected a bitcast between element types of one size, found "
                       f"{x.type.dtype} to {out.dtype}", E.UNSUPPORTED_FEATURE)
    if x.type.size != out.size:
        raise cx.error(f"expected a bitcast to as many elements as {x.type}, found {out}")
    dst_order = _major_to_minor(dst)  # type: ignore[arg-type]
    if src_layout != list(range(x.type.rank)):
        x = cx.emit1(ops.transpose, [x], {"permutation": tuple(src_layout)})
    physical = tuple(out.shape[d] for d in dst_order)
    if x.type.shape != physical:
        x = cx.emit1(ops.reshape, [x], {"shape": physical})
    if dst_order != list(range(out.rank)):
        inverse = tuple(int(i) for i in np.argsort(dst_order))
        x = cx.emit1(ops.transpose, [x], {"permutation": inverse})
    if x.type.dtype is not out.dtype:
        x = cx.emit1(ops.bitcast_convert, [x], {"dtype": out.dtype})
    return x


@converts("transpose")
def lower_transpose(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    perm = cx.attr_as("dimensions", tuple)
    x = cx.value(0)
    if perm == tuple(range(x.type.rank)):
        return x
    return cx.emit1(ops.transpose, [x], {"permutation": perm})


@converts("slice")
def lower_slice(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    ranges = cx.attr_as("slice", tuple)
    x = cx.value(0)
    if len(ranges) != x.type.rank:
        raise cx.attr_error("slice", f"expected {x.type.rank} slice ranges for {x.type}, "
                            f"found {len(ranges)}")
    return cx.emit1(ops.slice, [x], {
        "start_indices": tuple(r[0] for r in ranges),
        "limit_indices": tuple(r[1] for r in ranges),
        "strides": tuple(r[2] for r in ranges),
    })


def start_indices(cx: InstrContext, first: int, rank: int) -> list[Value]:
    """The scalar start indices from operand `first` on (one vector operand in old HLO)."""
    starts = cx.values()[first:]
    if len(starts) == 1 and starts[0].type.rank == 1:
        vec = starts[0]
        return [cx.emit1(ops.reshape, [cx.emit1(ops.slice, [vec], {
            "start_indices": (i,), "limit_indices": (i + 1,), "strides": (1,)})],
            {"shape": ()}) for i in range(vec.type.shape[0])]
    return starts


@converts("dynamic-slice")
def lower_dynamic_slice(cx: InstrContext) -> Tree:
    x = cx.value(0)
    sizes = cx.attr("dynamic_slice_sizes")
    return cx.emit1(ops.dynamic_slice, [x, *start_indices(cx, 1, x.type.rank)],
                    {"slice_sizes": tuple(sizes)})  # type: ignore[arg-type]


@converts("dynamic-update-slice")
def lower_dynamic_update_slice(cx: InstrContext) -> Tree:
    x, update = cx.value(0), cx.value(1)
    return cx.emit1(ops.dynamic_update_slice, [x, update, *start_indices(cx, 2, x.type.rank)])


@converts("pad")
def lower_pad(cx: InstrContext) -> Tree:
    cx.operand_count(2)
    x, value = cx.value(0), cx.value(1)
    padding = cx.attr_as("padding", tuple)
    if len(padding) != x.type.rank:
        raise cx.attr_error("padding", f"expected padding for {x.type.rank} dimensions, "
                            f"found {len(padding)}")
    return cx.emit1(ops.pad, [x, value], {
        "low": tuple(p[0] for p in padding),
        "high": tuple(p[1] for p in padding),
        "interior": tuple(p[2] for p in padding),
    })


@converts("concatenate")
def lower_concatenate(cx: InstrContext) -> Tree:
    dims = cx.attr_as("dimensions", tuple)
    if len(dims) != 1:
        raise cx.attr_error("dimensions", f"expected one concatenate dimension, found "
                            f"{len(dims)}")
    values = cx.values()
    if len(values) == 1:
        return values[0]
    return cx.emit1(ops.concatenate, values, {"dimension": dims[0]})


@converts("reverse")
def lower_reverse(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    dims = cx.attr_as("dimensions", tuple)
    x = cx.value(0)
    return cx.emit1(ops.reverse, [x], {"dimensions": dims}) if dims else x


@converts("iota")
def lower_iota(cx: InstrContext) -> Tree:
    cx.operand_count(0)
    out = cx.out_type
    return cx.emit1(ops.iota, [], {"dtype": out.dtype, "shape": out.shape,
                                 "dimension": cx.attr("iota_dimension")})


@converts("constant")
def lower_constant(cx: InstrContext) -> Tree:
    instr = cx.instr
    if instr.literal_elided:
        raise cx.error("expected the constant's values, found them elided as {...} (dump the "
                       "HLO with print_large_constants, e.g. XLA_FLAGS=--xla_dump_large_"
                       "constants)", at=instr.operands_offset)
    if instr.shape.is_tuple:
        return _tuple_constant(cx, instr.shape, instr.literal)
    out = cx.out_type
    if not isinstance(instr.literal, np.ndarray):
        raise cx.error(f"expected the constant's values, found {instr.literal!r}",
                       at=instr.operands_offset)
    return cx.emit1(ops.constant, [], {"value": Dense.of(instr.literal, out.dtype)})


def _tuple_constant(cx: InstrContext, shape, value) -> Tree:
    if shape.is_tuple:
        return tuple(_tuple_constant(cx, s, v) for s, v in
                     zip(shape.elements, value, strict=True))
    return cx.emit1(ops.constant, [], {"value": Dense.of(value, cx.ir_type(shape).dtype)})


@converts("get-dimension-size")
def lower_get_dimension_size(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    x = cx.value(0)
    dims = cx.attr("dimensions")
    return cx.b.constant(np.int32(x.type.shape[dims[0]]), DType.S32)  # type: ignore[index]
