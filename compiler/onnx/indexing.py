"""Indexing operators: Slice, Split, Gather, Pad, Tile, Trilu, CumSum, CumProd."""

from __future__ import annotations

import numpy as np

from nxcc.compiler.onnx.context import NodeContext, splat_like
from nxcc.compiler.onnx.registry import converts
from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.computations import binary_computation
from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType


def _slice_dim(start: int, end: int, step: int, n: int) -> tuple[int, int, int]:
    """ONNX Slice along a dim of size n: (first index, element count, step)."""
    start = start + n if start < 0 else start
    end = end + n if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), n), min(max(end, 0), n)
    else:
        start, end = min(max(start, 0), n - 1), min(max(end, -1), n - 1)
    return start, len(range(start, end, step)), step


def strided_slice(b: Builder, x: Value, starts: list[int], counts: list[int],
                  steps: list[int]) -> Value:
    """Elements starts[d] + i * steps[d] for i < counts[d] along every dim (steps may be
    negative: those dims are reversed first)."""
    shape = x.type.shape
    rev = [d for d, s in enumerate(steps) if s < 0 and counts[d] > 0]
    if rev:
        x = b.reverse(x, dimensions=tuple(rev))
    begin, limit, stride = [], [], []
    for d, n in enumerate(shape):
        first, step = starts[d], steps[d]
        if counts[d] == 0:
            first, step = 0, 1
        elif step < 0:
            first, step = n - 1 - first, -step
        begin.append(first)
        limit.append(first + (counts[d] - 1) * step + 1 if counts[d] else first)
        stride.append(step)
    if begin == [0] * len(shape) and limit == list(shape) and stride == [1] * len(shape):
        return x
    return b.slice(x, start_indices=tuple(begin), limit_indices=tuple(limit),
                   strides=tuple(stride))


@converts("Slice")
def convert_slice(ctx: NodeContext) -> list[Value]:
    """starts/ends/axes are attributes before opset 10, inputs (with steps) since."""
    x = ctx.input(0)
    if ctx.opset < 10:
        starts, ends = list(ctx.attr("starts", [])), list(ctx.attr("ends", []))
        axes, steps = ctx.attr("axes"), None
    else:
        starts = ctx.ints_input(1, "starts") or []
        ends = ctx.ints_input(2, "ends") or []
        axes, steps = ctx.ints_input(3, "axes"), ctx.ints_input(4, "steps")
    axes = list(range(len(starts))) if axes is None else list(axes)
    steps = [1] * len(starts) if steps is None else steps
    if not len(starts) == len(ends) == len(axes) == len(steps):
        raise ctx.fail("starts, ends, axes and steps must have the same length")
    shape = x.type.shape
    first, counts, strides = [0] * len(shape), list(shape), [1] * len(shape)
    for a, s, e, st in zip(ctx.axes(axes, len(shape)), starts, ends, steps, strict=True):
        if st == 0:
            raise ctx.fail("steps must not be 0")
        first[a], counts[a], strides[a] = _slice_dim(int(s), int(e), int(st), shape[a])
    return [strided_slice(ctx.b, x, first, counts, strides)]


@converts("Split")
def convert_split(ctx: NodeContext) -> list[Value]:
    """Sizes from the 'split' input (opset 13+) or attribute; else num_outputs (opset 18)
    chunks of ceil(n / num_outputs), or equal parts, one per output."""
    b, x = ctx.b, ctx.input(0)
    axis = ctx.axis(int(ctx.attr("axis", 0)), x.type.rank)
    n = x.type.shape[axis]
    split = ctx.ints_input(1, "split") if ctx.opset >= 13 else ctx.attr("split")
    if split is None:
        parts = int(ctx.attr("num_outputs", ctx.num_outputs))
        if ctx.opset >= 18 and "num_outputs" in ctx.attrs:
            chunk = -(-n // parts)
            split = [min(chunk, max(n - i * chunk, 0)) for i in range(parts)]
        elif n % parts:
            raise ctx.fail(f"cannot split dimension {axis} of size {n} into {parts} equal parts")
        else:
            split = [n // parts] * parts
    split = [int(s) for s in split]
    if sum(split) != n or any(s < 0 for s in split):
        raise ctx.fail(f"split sizes {split} do not add up to dimension {axis} of size {n}")
    outs, offset = [], 0
    for size in split:
        starts = [offset if d == axis else 0 for d in range(x.type.rank)]
        counts = [size if d == axis else m for d, m in enumerate(x.type.shape)]
        outs.append(strided_slice(b, x, starts, counts, [1] * x.type.rank))
        offset += size
    return outs


def normalized_indices(ctx: NodeContext, indices: Value, n: int) -> Value:
    """Indices with negatives counted from the end (compile-time when constant)."""
    b = ctx.b
    if not indices.type.dtype.is_integer:
        raise ctx.fail(f"indices must be integers, got {indices.type}")
    known = ctx.const(1)
    if known is not None:
        known = np.asarray(known).astype(np.int64)
        if np.any((known < -n) | (known >= n)):
            raise ctx.fail(f"indices out of range [-{n}, {n - 1}]")
        return b.constant(np.where(known < 0, known + n, known))
    if indices.type.dtype.is_unsigned_int:
        return indices
    negative = b.compare(indices, splat_like(b, 0, indices), direction="LT")
    return b.select(negative, b.add(indices, splat_like(b, n, indices)), indices)


@converts("Gather")
def convert_gather(ctx: NodeContext) -> list[Value]:
    """out = data.shape[:axis] + indices.shape + data.shape[axis+1:] (jnp.take) as a core
    gather; a constant scalar index is a slice."""
    b, data, indices = ctx.b, ctx.input(0), ctx.input(1)
    r = data.type.rank
    axis = ctx.axis(int(ctx.attr("axis", 0)), r)
    known = ctx.const(1)  # a constant scalar index is a slice
    if known is not None and indices.type.rank == 0:
        n = data.type.shape[axis]
        i = int(np.asarray(known).reshape(()))
        if not -n <= i < n:
            raise ctx.fail(f"index {i} out of range [-{n}, {n - 1}]")
        i %= n
        starts = [i if d == axis else 0 for d in range(r)]
        counts = [1 if d == axis else n for d, n in enumerate(data.type.shape)]
        part = strided_slice(b, data, starts, counts, [1] * r)
        return [b.reshape(part, [n for d, n in enumerate(data.type.shape) if d != axis])]
    return [take(b, data, normalized_indices(ctx, indices, data.type.shape[axis]), axis)]


def take(b: Builder, data: Value, idx: Value, axis: int) -> Value:
    """numpy.take(data, idx, axis) for in-range indices idx >= 0, as a core gather."""
    r = data.type.rank
    out_shape = (*data.type.shape[:axis], *idx.type.shape, *data.type.shape[axis + 1:])
    idx = b.reshape(idx, (1,)) if idx.type.rank == 0 else idx  # gather one-element batches
    q = idx.type.rank
    offset_dims = tuple(range(axis)) + tuple(range(axis + q, r + q - 1))
    sizes = tuple(1 if d == axis else n for d, n in enumerate(data.type.shape))
    out = b.gather(data, idx, offset_dims=offset_dims, collapsed_slice_dims=(axis,),
                   start_index_map=(axis,), index_vector_dim=q, slice_sizes=sizes)
    return b.reshape(out, out_shape)


def _pads(ctx: NodeContext, rank: int) -> tuple[list[int], list[int]]:
    if ctx.opset < 11:
        pads = [int(p) for p in ctx.attr("pads", [])]
        axes = list(range(rank))
    else:
        pads = ctx.ints_input(1, "pads") or []
        given = ctx.ints_input(3, "axes")
        axes = list(range(rank)) if given is None else ctx.axes(given, rank)
    if len(pads) != 2 * len(axes):
        raise ctx.fail(f"pads {pads} must have {2 * len(axes)} entries")
    low, high = [0] * rank, [0] * rank
    for i, a in enumerate(axes):
        low[a], high[a] = pads[i], pads[i + len(axes)]
    return low, high


@converts("Pad")
def convert_pad(ctx: NodeContext) -> list[Value]:
    """constant mode as a core pad; edge, reflect and wrap by slicing and concatenating."""
    b, x = ctx.b, ctx.input(0)
    rank = x.type.rank
    low, high = _pads(ctx, rank)
    mode = ctx.attr("mode", "constant")
    if mode == "constant":
        if ctx.opset < 11:
            value = b.constant(np.array(ctx.attr("value", 0.0), x.type.dtype.numpy))
        elif ctx.optional(2) is not None:
            value = b.reshape(b.convert(ctx.input(2), x.type.dtype), ())
        else:
            value = b.constant(np.zeros((), x.type.dtype.numpy))
        return [b.pad(x, value, low=tuple(low), high=tuple(high), interior=(0,) * rank)]
    if mode not in ("edge", "reflect", "wrap"):
        raise ctx.unsupported(f"mode '{mode}'")
    # crop negative pads first, then grow one axis at a time
    shape = x.type.shape
    x = strided_slice(b, x, [max(-lo, 0) for lo in low],
                      [n - max(-lo, 0) - max(-hi, 0) for n, lo, hi in zip(shape, low, high,
                                                                          strict=True)],
                      [1] * rank)
    for d in range(rank):
        lo, hi = max(low[d], 0), max(high[d], 0)
        n = x.type.shape[d]
        if lo == hi == 0:
            continue
        if n == 0 or (mode == "reflect" and (lo > n - 1 or hi > n - 1)) or lo > n or hi > n:
            raise ctx.unsupported(f"{mode} padding of {lo}/{hi} on a dimension of size {n}")
        parts: list[Value | None] = []
        for size, at_end in ((lo, False), (hi, True)):
            if size == 0:
                parts.append(None)
                continue
            if mode == "edge":
                piece = _along(b, x, d, n - 1 if at_end else 0, 1, 1)
                piece = b.broadcast_to(piece, _with(x.type.shape, d, size))
            elif mode == "wrap":
                piece = _along(b, x, d, 0 if at_end else n - size, size, 1)
            else:  # reflect: mirror without repeating the edge element
                piece = _along(b, x, d, n - 2 if at_end else size, size, -1)
            parts.append(piece)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = b.concatenate(*pieces, dimension=d)
    return [x]


def _with(shape: tuple[int, ...], d: int, size: int) -> tuple[int, ...]:
    return tuple(size if i == d else n for i, n in enumerate(shape))


def _along(b: Builder, x: Value, d: int, start: int, count: int, step: int) -> Value:
    rank = x.type.rank
    starts = [start if i == d else 0 for i in range(rank)]
    counts = list(_with(x.type.shape, d, count))
    return strided_slice(b, x, starts, counts, [step if i == d else 1 for i in range(rank)])


@converts("Tile")
def convert_tile(ctx: NodeContext) -> list[Value]:
    """Broadcast x [d0, d1, ...] to [r0, d0, r1, d1, ...] and merge each pair."""
    b, x = ctx.b, ctx.input(0)
    repeats = [int(r) for r in ctx.const_input(1, "repeats").reshape(-1)]
    if len(repeats) != x.type.rank or any(r < 0 for r in repeats):
        raise ctx.fail(f"repeats {repeats} must have one entry >= 0 per dim of {x.type}")
    if all(r == 1 for r in repeats):
        return [x]
    wide = [n for r, d in zip(repeats, x.type.shape, strict=True) for n in (r, d)]
    y = b.op(ops.broadcast_in_dim, [x], {
        "shape": tuple(wide), "broadcast_dimensions": tuple(range(1, 2 * x.type.rank, 2))})
    return [b.reshape(y, [r * d for r, d in zip(repeats, x.type.shape, strict=True)])]


@converts("Trilu")
def convert_trilu(ctx: NodeContext) -> list[Value]:
    """Keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims."""
    b, x = ctx.b, ctx.input(0)
    if x.type.rank < 2:
        raise ctx.fail(f"input must have rank >= 2, got {x.type}")
    k = 0 if ctx.optional(1) is None else int(ctx.const_input(1, "k").reshape(()))
    rows = b.iota(dtype=DType.S64, shape=x.type.shape, dimension=x.type.rank - 2)
    cols = b.iota(dtype=DType.S64, shape=x.type.shape, dimension=x.type.rank - 1)
    diff = b.subtract(cols, rows)
    keep = b.compare(diff, splat_like(b, k, diff),
                     direction="GE" if ctx.attr("upper", 1) else "LE")
    return [b.select(keep, x, splat_like(b, 0, x))]


@converts("CumSum", "CumProd")
def convert_cumulative(ctx: NodeContext) -> list[Value]:
    """A reduce_window sum (product) whose window covers everything before (and at) each
    position."""
    b, x = ctx.b, ctx.input(0)
    opcode, identity = (ops.add, 0) if ctx.op_type == "CumSum" else (ops.multiply, 1)
    rank = x.type.rank
    axis = ctx.axis(int(ctx.const_input(1, "axis").reshape(())), rank)
    n = x.type.shape[axis]
    reverse = bool(ctx.attr("reverse", 0))
    if reverse:
        x = b.reverse(x, dimensions=(axis,))
    init = b.constant(np.full((), identity, x.type.dtype.numpy))
    if ctx.attr("exclusive", 0) and n:
        x = b.pad(x, init, low=_with((0,) * rank, axis, 1), high=_with((0,) * rank, axis, -1),
                  interior=(0,) * rank)
    y = b.op(ops.reduce_window, [x, init], {
        "window_dimensions": _with((1,) * rank, axis, max(n, 1)),
        "window_strides": (1,) * rank, "base_dilations": (1,) * rank,
        "window_dilations": (1,) * rank,
        "padding": tuple((max(n - 1, 0), 0) if d == axis else (0, 0) for d in range(rank)),
        "computation": binary_computation(b.module, opcode, x.type.dtype)})
    return [b.reverse(y, dimensions=(axis,)) if reverse else y]
