"""Sharding rules of data-movement ops.

- broadcast_in_dim: a split result dimension comes from the operand dimension mapped to it
  (or from nothing: the operand stays replicated and each device broadcasts its block);
- reshape: result dimension d splits with operand dimension e when the dimensions before
  them hold as many elements (then both splits cut every group of elements into the same
  contiguous chunks);
- transpose: through the permutation; slice, pad, dynamic_slice, dynamic_update_slice:
  dimensions they take whole; concatenate: any dimension but the concatenated one;
- reverse: any dimension; reversing a split one swaps the blocks (a collective_permute);
- iota: any dimension; splitting the counted one adds each device's offset;
- constant: replicate only; its users take their block at compile time, for free;
- bitcast_convert: the dimensions before a size change.

Linear data movement (broadcast, reshape, transpose, slice, concatenate, reverse) passes a
pending partial sum through.
"""

from __future__ import annotations

import math

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints
from nxcc.ir.core import Module, Op
from nxcc.passes.sharding.rules.strategy import (
    R,
    Strategy,
    partial,
    replicate,
    rule,
    split,
    splittable,
)


def _local(shape: tuple[int, ...], d: int, n: int) -> tuple[int, ...]:
    out = list(shape)
    out[d] //= n
    return tuple(out)


def _passthrough(op: Op, n: int) -> list[Strategy]:
    """Partial sum in (operand 0 and every other array operand), partial sum out."""
    t = op.results[0].type
    if not t.dtype.is_float:
        return []
    operands = tuple(partial(v.type.rank, n) for v in op.operands)
    return [Strategy("partial", "partial", operands, (partial(t.rank, n),))]


@rule(ops.broadcast_in_dim)
def broadcast_in_dim(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    dims = attr_ints(op.attrs, "broadcast_dimensions")
    out = [replicate(op)]
    for d in range(res.rank):
        if not splittable(res.shape[d], n):
            continue
        operand = R
        if d in dims and src.shape[dims.index(d)] == res.shape[d]:
            operand = split(src.rank, dims.index(d), n)
        out.append(Strategy(f"split{d}", "split", (operand,), (split(res.rank, d, n),),
                            {**op.attrs, "shape": _local(res.shape, d, n)}))
    return out + _passthrough(op, n)


@rule(ops.reshape)
def reshape(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    out = [replicate(op)]
    src_prefix = [math.prod(src.shape[:e]) for e in range(src.rank)]
    for d in range(res.rank):
        if not splittable(res.shape[d], n):
            continue
        before = math.prod(res.shape[:d])
        for e in range(src.rank):
            if src_prefix[e] == before and splittable(src.shape[e], n):
                out.append(Strategy(f"split{d}", "split", (split(src.rank, e, n),),
                                    (split(res.rank, d, n),),
                                    {**op.attrs, "shape": _local(res.shape, d, n)}))
                break
    return out + _passthrough(op, n)


@rule(ops.transpose)
def transpose(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    perm = attr_ints(op.attrs, "permutation")
    out = [replicate(op)]
    for d in range(res.rank):
        if splittable(res.shape[d], n):
            out.append(Strategy(f"split{d}", "split", (split(src.rank, perm[d], n),),
                                (split(res.rank, d, n),)))
    return out + _passthrough(op, n)


@rule(ops.slice)
def slice_(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    start, limit, strides = (attr_ints(op.attrs, k)
                             for k in ("start_indices", "limit_indices", "strides"))
    out = [replicate(op)]
    for d in range(res.rank):
        whole = start[d] == 0 and limit[d] == src.shape[d] and strides[d] == 1
        if whole and splittable(res.shape[d], n):
            lim = list(limit)
            lim[d] //= n
            out.append(Strategy(f"split{d}", "split", (split(src.rank, d, n),),
                                (split(res.rank, d, n),),
                                {**op.attrs, "limit_indices": tuple(lim)}))
    return out + _passthrough(op, n)


@rule(ops.pad)
def pad(op: Op, n: int, module: Module | None) -> list[Strategy]:
    res = op.results[0].type
    lo, hi, interior = (attr_ints(op.attrs, k) for k in ("low", "high", "interior"))
    out = [replicate(op)]
    for d in range(res.rank):
        if lo[d] == hi[d] == interior[d] == 0 and splittable(res.shape[d], n):
            s = split(res.rank, d, n)
            out.append(Strategy(f"split{d}", "split", (s, R), (s,)))
    return out


@rule(ops.concatenate)
def concatenate(op: Op, n: int, module: Module | None) -> list[Strategy]:
    res = op.results[0].type
    out = [replicate(op)]
    for d in range(res.rank):
        if d != op.attrs["dimension"] and splittable(res.shape[d], n):
            s = split(res.rank, d, n)
            out.append(Strategy(f"split{d}", "split", tuple(s for _ in op.operands), (s,)))
    return out + _passthrough(op, n)


@rule(ops.reverse)
def reverse(op: Op, n: int, module: Module | None) -> list[Strategy]:
    res = op.results[0].type
    out = [replicate(op)]
    for d in range(res.rank):
        if splittable(res.shape[d], n):
            s = split(res.rank, d, n)
            emit = "reverse_permute" if d in attr_ints(op.attrs, "dimensions") else None
            out.append(Strategy(f"split{d}", "split", (s,), (s,), emit=emit))
    return out + _passthrough(op, n)


@rule(ops.iota)
def iota(op: Op, n: int, module: Module | None) -> list[Strategy]:
    res = op.results[0].type
    out = [replicate(op)]
    for d in range(res.rank):
        if splittable(res.shape[d], n):
            emit = "iota_offset" if d == op.attrs["dimension"] else None
            out.append(Strategy(f"split{d}", "split", (), (split(res.rank, d, n),),
                                {**op.attrs, "shape": _local(res.shape, d, n)}, emit))
    return out


@rule(ops.constant)
def constant(op: Op, n: int, module: Module | None) -> list[Strategy]:
    """A constant is whole in the program; each user takes its block at compile time."""
    return [replicate(op)]


@rule(ops.bitcast_convert)
def bitcast_convert(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    out = [replicate(op)]
    for d in range(min(src.rank, res.rank)):
        if src.shape[d] == res.shape[d] and splittable(res.shape[d], n):
            out.append(Strategy(f"split{d}", "split", (split(src.rank, d, n),),
                                (split(res.rank, d, n),)))
    return out


@rule(ops.dynamic_slice)
def dynamic_slice(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, res = op.operands[0].type, op.results[0].type
    sizes = attr_ints(op.attrs, "slice_sizes")
    out = [replicate(op)]
    for d in range(res.rank):
        if sizes[d] == src.shape[d] and splittable(src.shape[d], n):
            starts = tuple(R for _ in op.operands[1:])
            out.append(Strategy(f"split{d}", "split", (split(src.rank, d, n), *starts),
                                (split(res.rank, d, n),),
                                {**op.attrs, "slice_sizes": _local(tuple(sizes), d, n)}))
    return out


@rule(ops.dynamic_update_slice)
def dynamic_update_slice(op: Op, n: int, module: Module | None) -> list[Strategy]:
    src, upd = op.operands[0].type, op.operands[1].type
    out = [replicate(op)]
    for d in range(src.rank):
        if upd.shape[d] == src.shape[d] and splittable(src.shape[d], n):
            s = split(src.rank, d, n)
            out.append(Strategy(f"split{d}", "split", (s, s, *(R for _ in op.operands[2:])),
                                (s,)))
    return out
