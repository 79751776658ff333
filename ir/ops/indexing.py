"""Indexing ops: dynamic_slice, dynamic_update_slice, gather, scatter (HLO semantics)."""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.opdef import OpDef, attr_specs, define, optional
from nxcc.ir.ops._rules import check_dims, check_scalar, fail
from nxcc.ir.ops._symbols import check_signature, lookup, scalar_of
from nxcc.ir.types import TensorType

INT, INTS, BOOL = AttrKind.INT, AttrKind.INTS, AttrKind.BOOL


def _check_start_indices(op: str, operand: TensorType, starts: list[TensorType]) -> None:
    if len(starts) != operand.rank:
        raise fail(f"{op}: needs {operand.rank} start indices for {operand}, got {len(starts)}")
    for i, s in enumerate(starts):
        check_scalar(op, f"start index {i}", s)
        if not s.dtype.is_integer:
            raise fail(f"{op}: start index {i} must be an integer, got {s}")


def _dynamic_slice(ts, attrs, module):
    operand, starts = ts[0], ts[1:]
    _check_start_indices("dynamic_slice", operand, starts)
    sizes = attrs["slice_sizes"]
    if len(sizes) != operand.rank or any(
        not 0 <= s <= n for s, n in zip(sizes, operand.shape, strict=True)
    ):
        raise fail(f"dynamic_slice: slice_sizes {list(sizes)} do not fit {operand}")
    return [operand.with_shape(sizes)]


dynamic_slice = define(OpDef(
    "dynamic_slice", _dynamic_slice, attrs=attr_specs(slice_sizes=INTS), operands=None,
    min_operands=1,
    doc="dynamic_slice(x, starts...): starts are clamped so the slice fits, as in HLO."))


def _dynamic_update_slice(ts, attrs, module):
    operand, update, starts = ts[0], ts[1], ts[2:]
    _check_start_indices("dynamic_update_slice", operand, starts)
    if update.dtype != operand.dtype or update.rank != operand.rank or any(
        u > n for u, n in zip(update.shape, operand.shape, strict=True)
    ):
        raise fail(f"dynamic_update_slice: update {update} does not fit in {operand}")
    return [operand]


dynamic_update_slice = define(OpDef("dynamic_update_slice", _dynamic_update_slice,
                                    operands=None, min_operands=2))


def _gather(ts, attrs, module):
    operand, indices = ts
    if not indices.dtype.is_integer:
        raise fail(f"gather: start indices must be integers, got {indices}")
    ivd = attrs["index_vector_dim"]
    idx_shape = list(indices.shape)
    if ivd == len(idx_shape):
        idx_shape.append(1)
    if not 0 <= ivd < len(idx_shape):
        raise fail(f"gather: index_vector_dim {ivd} is out of range for {indices}")
    sizes, offset_dims = attrs["slice_sizes"], attrs["offset_dims"]
    collapsed, batching = attrs["collapsed_slice_dims"], attrs["operand_batching_dims"]
    if len(sizes) != operand.rank:
        raise fail(f"gather: slice_sizes {list(sizes)} must have {operand.rank} entries")
    if len(attrs["start_index_map"]) != idx_shape[ivd]:
        raise fail(f"gather: start_index_map needs {idx_shape[ivd]} entries")
    check_dims("gather", "collapsed slice dim", (*collapsed, *batching), operand.rank)
    check_dims("gather", "start index map dim", attrs["start_index_map"], operand.rank)
    for d in (*collapsed, *batching):
        if sizes[d] > 1:
            raise fail(f"gather: collapsed or batching dim {d} needs slice size <= 1")
    for d, s in enumerate(sizes):
        if s > operand.shape[d]:
            raise fail(f"gather: slice size {s} exceeds operand dim {d} of {operand}")
    offset_sizes = [s for d, s in enumerate(sizes) if d not in collapsed and d not in batching]
    batch_sizes = [n for d, n in enumerate(idx_shape) if d != ivd]
    rank = len(batch_sizes) + len(offset_sizes)
    if len(offset_dims) != len(offset_sizes):
        raise fail(f"gather: offset_dims {list(offset_dims)} need {len(offset_sizes)} entries")
    check_dims("gather", "offset dim", offset_dims, rank)
    shape, bi, oi = [], iter(batch_sizes), iter(offset_sizes)
    for d in range(rank):
        shape.append(next(oi) if d in offset_dims else next(bi))
    return [operand.with_shape(shape)]


gather = define(OpDef("gather", _gather, operands=2, attrs=attr_specs(
    offset_dims=INTS, collapsed_slice_dims=INTS, operand_batching_dims=optional(INTS, ()),
    start_indices_batching_dims=optional(INTS, ()), start_index_map=INTS, index_vector_dim=INT,
    slice_sizes=INTS, indices_are_sorted=optional(BOOL, False)),
    doc="HLO gather; out-of-range starts are clamped."))


def _scatter(ts, attrs, module):
    if len(ts) % 2 == 0:
        raise fail("scatter: takes inputs..., indices, updates... (an odd operand count)")
    n = len(ts) // 2
    inputs, indices, updates = ts[:n], ts[n], ts[n + 1:]
    if not indices.dtype.is_integer:
        raise fail(f"scatter: indices must be integers, got {indices}")
    for i, t in enumerate(inputs):
        if t.shape != inputs[0].shape:
            raise fail(f"scatter: input {i} is {t}, expected the shape of {inputs[0]}")
    uw, inserted = attrs["update_window_dims"], attrs["inserted_window_dims"]
    batching = attrs["input_batching_dims"]
    rank = inputs[0].rank
    check_dims("scatter", "inserted window dim", (*inserted, *batching), rank)
    check_dims("scatter", "scatter dim", attrs["scatter_dims_to_operand_dims"], rank)
    if len(uw) + len(inserted) + len(batching) != rank:
        raise fail("scatter: update_window_dims + inserted_window_dims must cover the rank")
    for u in updates:
        check_dims("scatter", "update window dim", uw, u.rank)
    scalars = [scalar_of(t) for t in inputs]
    check_signature("scatter", lookup("scatter", module, attrs["computation"]),
                    scalars + [scalar_of(t) for t in updates], scalars)
    return list(inputs)


scatter = define(OpDef("scatter", _scatter, operands=None, min_operands=3, attrs=attr_specs(
    update_window_dims=INTS, inserted_window_dims=INTS, input_batching_dims=optional(INTS, ()),
    scatter_indices_batching_dims=optional(INTS, ()), scatter_dims_to_operand_dims=INTS,
    index_vector_dim=INT, computation=AttrKind.SYMBOL, indices_are_sorted=optional(BOOL, False),
    unique_indices=optional(BOOL, False)),
    doc="HLO scatter(inputs..., indices, updates...); out-of-range updates are skipped."))
