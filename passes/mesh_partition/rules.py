"""Per op: where its operands must lie and where its results then lie (`Decision`).

Every op definition has its rule in `MESH_RULES` (an `OpTable`, registered once, here):
``rule(module, op, dists, n, price) -> Decision``. The elementwise ops' rule is derived from
their definitions (`elementwise=True` without side effects); the ops in `WHOLE` are
registered as running on whole values. `KEEPS_PARTIAL` holds the ops a pending sum passes
through. `tests/ir/ops/test_op_coverage.py` checks that every op has its rule.

Operands come in non-partial (a pending reduction is all-reduced first). Each rule picks,
among a few candidate placements of the op's iteration space, the one whose operand
reshards move the fewest bytes (a local slice is free, an all-gather costs what it
brings in, a partial result what its all-reduce will): the placement all operands agree
with (`dist.combine`), each operand's own, and replicated, in that order on a tie.

- elementwise ops: one space over the result's dimensions;
- dot_general: batch, lhs-free, rhs-free and contracting axes; a split contraction gives a
  partial (summed) result;
- reduce of one input by add/max/min/multiply/and/or from its identity: split reduced
  dimensions give a partial result; other reduces gather the reduced dimensions;
- reshape: splits that stay whole blocks are kept (only the major dimension of a merged
  or split group may be split), others gathered; transpose permutes; broadcast_in_dim
  keeps the operand's splits; slice gathers the sliced dimensions; concatenate gathers the
  joined dimension;
- a pending sum passes through transpose, reshape and multiplication by a whole value
  (`linear`), so that it is reduced once, where a user needs it (a reduce-scatter when the
  user wants it split);
- every other op runs on whole values (operands replicated, results replicated): `WHOLE`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Symbol, attr_ints, attr_of
from nxcc.ir.core import Module, Op, Value
from nxcc.ir.opdef import OpDef, all_opdefs
from nxcc.ir.ops.collective import ASYNC_OPS
from nxcc.ir.registry import OpTable
from nxcc.ir.rewrite import constant_value
from nxcc.passes.mesh_partition.dist import Dist, combine, project

REDUCER: dict[OpDef, str] = {ops.add: "sum", ops.maximum: "max", ops.minimum: "min",
                             ops.multiply: "prod", ops.and_: "and", ops.or_: "or"}
IDENTITY = {"sum": 0, "max": -np.inf, "min": np.inf, "prod": 1}

Price = Callable[[Value, Dist], float]
"""Bytes a rank receives to have a value in a Dist (from the cheapest form it has)."""


@dataclass
class Decision:
    """Operand targets, result Dists and the attributes to emit the op with (local
    shapes), as a rule decides them."""

    operands: list[Dist]
    results: list[Dist]
    attrs: dict = field(default_factory=dict)
    then: list[Dist] | None = None  # where the results are moved (locally) right after


#: rule(module, op, operand Dists (non-partial), n, price) -> the op's Decision
MeshRule = Callable[[Module, Op, list[Dist], int, Price], Decision]
#: op definition -> its rule
MESH_RULES: OpTable[MeshRule] = OpTable("mesh partition rule")
mesh_rule = MESH_RULES.register

#: rule(module, op, operand Dists as they are (partial ones included, None: made where
#: needed), n) -> the Decision keeping a pending sum, or None when that does not apply
PartialRule = Callable[[Module, Op, Sequence[Dist | None], int], "Decision | None"]
#: op definition -> how a pending sum passes through it (the ops linear in it)
KEEPS_PARTIAL: OpTable[PartialRule] = OpTable("pending-sum rule")


def gathers(src: Dist, dst: Dist) -> list[int]:
    """The dimensions `src` must be all-gathered along before `dst` is a local slice."""
    return [d for d in range(src.rank) if not src.contains_dim(dst, d)]


def reshard_cost(src: Dist, dst: Dist, nbytes: int) -> float:
    """Bytes a rank receives going from `src` (non-partial) to `dst`."""
    kept = math.prod(src.tiles[d] for d in gathers(src, dst))
    return nbytes / math.prod(src.tiles) * (kept - 1)


def replicated_decision(op: Op, n: int) -> Decision:
    """Every operand and result whole on every rank."""
    return Decision([Dist.replicated(v.type.rank, n) for v in op.operands],
                    [Dist.replicated(r.type.rank, n) for r in op.results], dict(op.attrs))


def own_price(v: Value, dst: Dist, src: Dist) -> float:
    return reshard_cost(src, dst, v.type.nbytes)


def _choose(n: int, axes: int, views: Sequence[tuple[Dist, Sequence[int], Value]],
            partial_axes: Sequence[int], result_bytes: int, price: Price) -> Dist:
    """The cheapest space placement (see the module docstring); views are (Dist, axis of
    each dimension, the value)."""
    cands = [combine(n, axes, [(d, a) for d, a, _ in views])]
    cands += [combine(n, axes, [(d, a)]) for d, a, _ in views]
    cands.append(Dist.replicated(axes, n))
    best, best_cost = None, None
    for c in cands:
        if c is None:
            continue
        cost = sum(price(v, project(c, a)) for _, a, v in views)
        if any(c.tiles[a] > 1 for a in partial_axes):
            cost += result_bytes
        if best_cost is None or cost < best_cost:
            best, best_cost = c, cost
    assert best is not None
    return best


def elementwise(module: Module, op: Op, dists: list[Dist], n: int, price: Price
                ) -> Decision:
    shape = op.results[0].type.shape
    rank = len(shape)
    views = [(d, range(rank), v) for v, d in zip(op.operands, dists, strict=True)
             if v.type.shape == shape and constant_value(v) is None]
    space = _choose(n, rank, views, (), 0, price)
    if not space.fits(shape):
        return replicated_decision(op, n)
    targets = [space if v.type.shape == shape else Dist.replicated(v.type.rank, n)
               for v in op.operands]
    return Decision(targets, [space] * len(op.results), dict(op.attrs))


@mesh_rule(ops.dot_general)
def dot_general(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    a = op.attrs
    lhs, rhs = op.operands
    lb, rb = attr_ints(a, "lhs_batch_dims"), attr_ints(a, "rhs_batch_dims")
    lc, rc = attr_ints(a, "lhs_contracting_dims"), attr_ints(a, "rhs_contracting_dims")
    lf = [d for d in range(lhs.type.rank) if d not in lb and d not in lc]
    rf = [d for d in range(rhs.type.rank) if d not in rb and d not in rc]
    nb, nl, nr = len(lb), len(lf), len(rf)
    lhs_axes = [0] * lhs.type.rank
    rhs_axes = [0] * rhs.type.rank
    for i, (x, y) in enumerate(zip(lb, rb, strict=True)):
        lhs_axes[x], rhs_axes[y] = i, i
    for i, x in enumerate(lf):
        lhs_axes[x] = nb + i
    for i, y in enumerate(rf):
        rhs_axes[y] = nb + nl + i
    for i, (x, y) in enumerate(zip(lc, rc, strict=True)):
        lhs_axes[x], rhs_axes[y] = nb + nl + nr + i, nb + nl + nr + i
    axes = nb + nl + nr + len(lc)
    views = [(d, ax, v) for v, d, ax in
             ((lhs, dists[0], lhs_axes), (rhs, dists[1], rhs_axes)) if constant_value(v) is None]
    contracting = range(nb + nl + nr, axes)
    result = op.results[0]
    space = _choose(n, axes, views, contracting, result.type.nbytes, price)
    targets = [project(space, lhs_axes), project(space, rhs_axes)]
    shape = (*(lhs.type.shape[d] for d in lb), *(lhs.type.shape[d] for d in lf),
             *(rhs.type.shape[d] for d in rf), *(lhs.type.shape[d] for d in lc))
    if not space.fits(shape):
        return replicated_decision(op, n)
    tiles = space.tiles[:nb + nl + nr]
    k = math.prod(space.tiles[nb + nl + nr:])
    out = Dist.of_grid(space.grid.reshape(*tiles, k, space.copies))
    return Decision(targets, [out], dict(a))


def reduction_kind(module: Module, op: Op) -> str | None:
    """What the reduce's computation is, when it is one binary op of its two parameters."""
    fn = module.functions.get(attr_of(op.attrs, "computation", Symbol).name)
    if fn is None or len(fn.params) != 2 or len(fn.body) != 1:
        return None
    body = fn.body[0]
    if fn.results != [body.result] or {id(v) for v in body.operands} != {id(p) for p in
                                                                         fn.params}:
        return None
    return REDUCER.get(body.opdef)


def _is_identity(v, kind: str) -> bool:
    c = constant_value(v)
    if c is None or not c.is_splat:
        return False
    x = c.splat_value
    if kind in ("and", "or"):
        return bool(x) == (kind == "and")
    return bool(x == IDENTITY[kind])


@mesh_rule(ops.reduce)
def reduce(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    half = len(op.operands) // 2
    xs, inits = op.operands[:half], op.operands[half:]
    dims = list(attr_ints(op.attrs, "dimensions"))
    rank = xs[0].type.rank
    kind = reduction_kind(module, op) if half == 1 else None
    views = [(d, range(rank), v) for v, d in zip(xs, dists[:half], strict=True)]
    space = _choose(n, rank, views, (), 0, price)
    if kind is None or not all(_is_identity(i, kind) for i in inits):
        for d in dims:
            if space.tiles[d] > 1:
                space = space.gathered(d)
    kept = [d for d in range(rank) if d not in dims]
    g = space.grid.transpose(*kept, *dims, rank, rank + 1)
    out = Dist.of_grid(g.reshape(*(space.tiles[d] for d in kept), -1, space.copies),
                       kind or "sum")
    return Decision([space] * half + [Dist.replicated(0, n)] * half, [out] * half,
                    dict(op.attrs))


def _reshape_groups(a: Sequence[int], b: Sequence[int]) -> list[tuple[list[int], list[int]]]:
    """Minimal runs of dimensions of `a` and `b` with equal products (size-1 dims join the
    run they fall in)."""
    groups, i, j = [], 0, 0
    while i < len(a) or j < len(b):
        gi, gj, pa, pb = [], [], 1, 1
        while True:
            if pa <= pb and i < len(a):
                pa *= a[i]
                gi.append(i)
                i += 1
            elif j < len(b):
                pb *= b[j]
                gj.append(j)
                j += 1
            else:
                break
            if pa == pb and (gi or i == len(a)) and (gj or j == len(b)) and \
                    (i == len(a) or a[i] != 1) and (j == len(b) or b[j] != 1):
                break
        groups.append((gi, gj))
    return groups


@mesh_rule(ops.reshape)
def reshape(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    return reshaped(op, dists[0])


def reshaped(op: Op, src: Dist) -> Decision:
    """A split input dimension stays split when it is the major dimension of its group and
    its tile count divides the group's major output dimension; otherwise it is gathered,
    and when it is alone in its group the result is split again, by a local slice, along the
    group's first output dimension that divides (`Decision.then`), so the ranks keep
    dividing the work (attention heads out of a fused QKV projection)."""
    orig = src
    a, b = op.operands[0].type.shape, tuple(attr_ints(op.attrs, "shape"))
    tiles = [1] * len(b)
    again = list(tiles)
    gathered_only = []
    for gi, gj in _reshape_groups(a, b):
        big_i = [d for d in gi if a[d] > 1]
        big_j = [d for d in gj if b[d] > 1]
        split = [d for d in gi if src.tiles[d] > 1]
        for d in split:
            t = src.tiles[d]
            if big_i and d == big_i[0] and big_j and b[big_j[0]] % t == 0:
                tiles[big_j[0]] = again[big_j[0]] = t
                continue
            src = src.gathered(d)
            fit = [j for j in gj if b[j] > 1 and b[j] % t == 0]
            if len(split) == 1 and fit:
                again[fit[0]] = t
            else:
                gathered_only.append(d)
    out = src.with_tiles(tiles)
    then = None
    if again != tiles:
        for d in gathered_only:
            orig = orig.gathered(d)
        then = [orig.with_tiles(again)]
    return Decision([src], [out], {"shape": out.local_shape(b)}, then)


@mesh_rule(ops.transpose)
def transpose(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    return transposed(op, dists[0])


def transposed(op: Op, src: Dist) -> Decision:
    return Decision([src], [src.transposed(attr_ints(op.attrs, "permutation"))], dict(op.attrs))


@mesh_rule(ops.broadcast_in_dim)
def broadcast_in_dim(module: Module, op: Op, dists: list[Dist], n: int, price: Price
                     ) -> Decision:
    src = dists[0]
    x = op.operands[0]
    shape = tuple(attr_ints(op.attrs, "shape"))
    bd = list(attr_ints(op.attrs, "broadcast_dimensions"))
    for i, j in enumerate(bd):
        if src.tiles[i] > 1 and x.type.shape[i] != shape[j]:
            src = src.gathered(i)
    order = sorted(range(len(bd)), key=lambda i: bd[i])
    tiles = [1] * len(shape)
    for i, j in enumerate(bd):
        tiles[j] = src.tiles[i]
    g = src.grid.transpose(*order, src.rank, src.rank + 1)
    out = Dist.of_grid(g.reshape(*tiles, 1, src.copies))
    return Decision([src], [out], {"shape": out.local_shape(shape),
                                   "broadcast_dimensions": tuple(bd)})


@mesh_rule(ops.slice)
def slice_(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    src = dists[0]
    shape = op.operands[0].type.shape
    start, limit, stride = (list(attr_ints(op.attrs, k)) for k in ("start_indices",
                                                                   "limit_indices", "strides"))
    for d in range(len(shape)):
        entire = (start[d], limit[d], stride[d]) == (0, shape[d], 1)
        if src.tiles[d] > 1 and not entire:
            src = src.gathered(d)
        elif src.tiles[d] > 1:
            limit[d] = shape[d] // src.tiles[d]
    return Decision([src], [src], {"start_indices": tuple(start),
                                   "limit_indices": tuple(limit), "strides": tuple(stride)})


@KEEPS_PARTIAL.register(ops.transpose)
def _transpose_partial(module: Module, op: Op, raw: Sequence[Dist | None], n: int
                       ) -> Decision | None:
    """A pending sum transposed as it is."""
    if raw[0] is None or raw[0].partial <= 1:
        return None
    return transposed(op, raw[0])


@KEEPS_PARTIAL.register(ops.reshape)
def _reshape_partial(module: Module, op: Op, raw: Sequence[Dist | None], n: int
                     ) -> Decision | None:
    """A pending sum through a reshape that needs no gather."""
    if raw[0] is None or raw[0].partial <= 1:
        return None
    dec = reshaped(op, raw[0])
    return dec if dec.operands[0] == raw[0] and dec.then is None else None


@KEEPS_PARTIAL.register(ops.multiply, ops.divide)
def _scaled_partial(module: Module, op: Op, raw: Sequence[Dist | None], n: int
                    ) -> Decision | None:
    """A pending sum multiplied (or divided) by a whole value."""
    d = op.opdef
    if op.operands[0].type.shape != op.operands[1].type.shape:
        return None
    for i in (0, 1) if d is ops.multiply else (0,):
        p, other = raw[i], raw[1 - i]
        if p is not None and p.partial > 1 and p.reduction == "sum" and \
                (other is None or other.partial == 1):
            targets = [p, p]
            targets[1 - i] = p.reduced()
            return Decision(targets, [p], dict(op.attrs))
    return None


@mesh_rule(ops.concatenate)
def concatenate(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    """Operands split alike on every dimension but the joined one, which is whole."""
    dim = attr_of(op.attrs, "dimension", int)
    rank = op.results[0].type.rank
    views = [(d.gathered(dim) if d.tiles[dim] > 1 else d, range(rank), v)
             for v, d in zip(op.operands, dists, strict=True) if constant_value(v) is None]
    space = _choose(n, rank, views, (), 0, price)
    if space.tiles[dim] > 1 or not all(space.fits(v.type.shape) for v in op.operands):
        return replicated_decision(op, n)
    return Decision([space] * len(op.operands), [space], dict(op.attrs))


def whole(module: Module, op: Op, dists: list[Dist], n: int, price: Price) -> Decision:
    """Operands replicated, results replicated (`replicated_decision`)."""
    return replicated_decision(op, n)


#: the ops that run on whole values: control flow, indexing by data, collectives and
#: transfers already in the program, per-rank ids and random draws, and the rest of the
#: data movement and arithmetic without a rule of its own
WHOLE = (ops.call, ops.while_, ops.conditional, ops.optimization_barrier, ops.partition_id,
         ops.replica_id, ops.all_reduce, ops.all_gather, ops.reduce_scatter, ops.all_to_all,
         ops.collective_permute, ops.send, ops.send_done, ops.recv, ops.recv_done,
         *ASYNC_OPS, ops.tp_copy, ops.bitcast_convert, ops.dynamic_slice,
         ops.dynamic_update_slice, ops.gather, ops.scatter, ops.random_bits,
         ops.reduce_window, ops.select_and_scatter, ops.sort, ops.pad, ops.reverse,
         ops.iota, ops.constant, ops.convolution, ops.fused_elementwise,
         ops.fused_convolution, ops.softmax, ops.layer_norm)
mesh_rule(*WHOLE)(whole)
mesh_rule(*(d for d in all_opdefs() if d.elementwise and not d.side_effects))(elementwise)


def decide(module: Module, op: Op, dists: list[Dist], n: int, price: Price | None = None,
           raw: Sequence[Dist | None] | None = None) -> Decision:
    """The rule for `op` (operand Dists non-partial), or the whole-value fallback.
    `price` says what having an operand in a Dist costs (default: from its own Dist);
    `raw` are the operands' own Dists (partial ones included, None: made where needed)."""
    keep = KEEPS_PARTIAL.get(op.opdef) if raw is not None else None
    kept = keep(module, op, raw, n) if keep is not None else None  # type: ignore[arg-type]
    if kept is not None:
        return kept
    if price is None:
        own = {id(v): d for v, d in zip(op.operands, dists, strict=True)}

        def price(v: Value, dst: Dist) -> float:
            return own_price(v, dst, own[id(v)])

    rule = MESH_RULES.get(op.opdef, whole)
    return rule(module, op, dists, n, price)  # type: ignore[misc]
