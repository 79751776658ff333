"""Emitting a value's move from one Dist to another in the rank program.

`Resharder.get(v, dst)` gives the rank-local value of the global value `v` laid out as
`dst`, emitting what it takes at most once per (value, Dist):

1. a pending reduction: one reduce-scatter over the summands' ranks when its blocks hold
   the `dst` blocks, else one all-reduce;
2. each dimension along which a rank's block does not hold its `dst` block: an all-gather
   over the ranks that split it (replica groups in block order);
3. a local slice to the `dst` block: static when every rank's offset is the same, else
   a dynamic_slice whose starts are read by partition_id from a constant table.

A value no rank has computed yet (a constant, or a pure op of constants, `free`) is made
where it is needed: a splat at the local shape, a broadcast of the operand's block, or the
whole value sliced.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_ints
from nxcc.ir.builder import Builder
from nxcc.ir.core import Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import constant_value
from nxcc.passes.mesh_partition.dist import Dist, project
from nxcc.passes.mesh_partition.rules import gathers, reshard_cost


class Resharder:
    """The rank-local forms of the global values (see the module docstring)."""

    def __init__(self, b: Builder, n: int, emit_global: Callable[[Op], list[Value]]) -> None:
        self.b = b
        self.n = n
        self.emit_global = emit_global  # re-emits a free op on whole values
        self.forms: dict[int, dict[Dist, Value]] = {}
        self.own: dict[int, Dist] = {}
        self.free: set[int] = set()
        self.channel = 0
        self._pid: Value | None = None

    def define(self, v: Value, local: Value, dist: Dist) -> None:
        self.forms[id(v)] = {dist: local}
        self.own[id(v)] = dist

    def move(self, v: Value, dst: Dist, only: bool = False) -> None:
        """Make `dst` the Dist `v`'s users start from (a re-split); `only`: the one form
        they see (a constraint)."""
        if id(v) in self.free or not dst.fits(v.type.shape):
            return
        x = self.get(v, dst)
        self.own[id(v)] = dst
        if only:
            self.forms[id(v)] = {dst: x}

    def dist_of(self, v: Value) -> Dist | None:
        """Where `v` lies (non-partial: as a user sees it), None for a free value."""
        d = self.own.get(id(v))
        return d.reduced() if d is not None and d.partial > 1 else d

    def _next_channel(self) -> int:
        self.channel += 1
        return self.channel

    def price(self, v: Value, dst: Dist) -> float:
        """Bytes a rank receives to have `v` as `dst`, from the cheapest form it has."""
        if id(v) in self.free:
            return 0.0
        forms = [f for f in self.forms[id(v)] if f.partial == 1]
        if not forms:
            return v.type.nbytes + reshard_cost(self.own[id(v)].reduced(), dst, v.type.nbytes)
        return min(reshard_cost(f, dst, v.type.nbytes) for f in forms)

    def get(self, v: Value, dst: Dist) -> Value:
        if id(v) in self.free:
            return self._make(v, dst)
        forms = self.forms[id(v)]
        if dst in forms:
            return forms[dst]
        src = self.own[id(v)]
        if src.partial > 1 and not any(f.partial == 1 for f in forms):
            scattered = _scatter_target(src, dst, v.type.shape) if src.reduction == "sum" \
                else None
            if scattered is not None:
                d, after = scattered
                forms[after] = self.b.op(ops.reduce_scatter, [forms[src]], {
                    "dimension": d, "reduction": "sum", "replica_groups": src.reduce_groups(),
                    "channel_id": self._next_channel()})
            else:
                forms[src.reduced()] = self._all_reduce(forms[src], src)
        whole = [f for f in forms if f.partial == 1]
        src = min(whole, key=lambda f: reshard_cost(f, dst, v.type.nbytes))
        x = forms[src]
        if dst == src:
            return x
        for d in gathers(src, dst):
            x = self.b.op(ops.all_gather, [x], {
                "dimension": d, "replica_groups": src.gather_groups(d),
                "channel_id": self._next_channel()})
            src = src.gathered(d)
            forms.setdefault(src, x)
        x = self._slice(x, src, dst, v.type.shape)
        forms[dst] = x
        return x

    def _all_reduce(self, x: Value, src: Dist) -> Value:
        return self.b.op(ops.all_reduce, [x], {
            "reduction": src.reduction, "replica_groups": src.reduce_groups(),
            "channel_id": self._next_channel()})

    def _partition_id(self) -> Value:
        if self._pid is None:
            pid = self.b.op(ops.partition_id, [])
            self._pid = self.b.op(ops.convert, [pid], {"dtype": DType.S32})
        return self._pid

    def _slice(self, x: Value, src: Dist, dst: Dist, shape: tuple[int, ...]) -> Value:
        """`dst`'s block from `src`'s, which holds it."""
        offsets = dst.starts(shape) - src.starts(shape)
        local = dst.local_shape(shape)
        if x.type.shape == local and not offsets.any():
            return x
        if (offsets == offsets[:1]).all():
            start = tuple(int(o) for o in offsets[0])
            return self.b.op(ops.slice, [x], {
                "start_indices": start, "limit_indices": tuple(s + n for s, n in
                                                               zip(start, local, strict=True)),
                "strides": (1,) * len(local)})
        starts = [self._rank_value(offsets[:, d]) for d in range(len(local))]
        return self.b.op(ops.dynamic_slice, [x, *starts], {"slice_sizes": local})

    def _rank_value(self, table: np.ndarray) -> Value:
        """A s32 scalar: table[partition_id]."""
        if not table.any():
            return self.b.constant(np.int32(0), DType.S32)
        t = self.b.constant(table.astype(np.int32), DType.S32)
        one = self.b.op(ops.dynamic_slice, [t, self._partition_id()], {"slice_sizes": (1,)})
        return self.b.op(ops.reshape, [one], {"shape": ()})

    def _make(self, v: Value, dst: Dist) -> Value:
        """A free value's `dst` block (see the module docstring)."""
        forms = self.forms.setdefault(id(v), {})
        if dst in forms:
            return forms[dst]
        op = v.owner
        assert op is not None
        c = constant_value(v)
        whole = Dist.replicated(v.type.rank, self.n)
        local = dst.local_shape(v.type.shape)
        if c is not None and c.is_splat:
            x = self.b.op(ops.constant, [], {"value": Dense.splat(
                v.type.with_shape(local), c.splat_value)})
        elif op.opdef is ops.broadcast_in_dim and dst != whole:
            bd = list(attr_ints(op.attrs, "broadcast_dimensions"))
            operand = op.operands[0]
            dims = [j if operand.type.shape[i] == v.type.shape[j] and dst.tiles[j] > 1
                    else None for i, j in enumerate(bd)]
            src = project(dst, dims)
            y = self._make(operand, src) if id(operand) in self.free else self.get(operand, src)
            x = self.b.op(ops.broadcast_in_dim, [y], {"shape": local,
                                                     "broadcast_dimensions": tuple(bd)})
        elif dst == whole:
            x = self.emit_global(op)[v.index]
        else:
            w = self._make(v, whole)
            x = self._slice(w, whole, dst, v.type.shape)
        forms[dst] = x
        return x


def _scatter_target(src: Dist, dst: Dist, shape: tuple[int, ...]) -> tuple[int, Dist] | None:
    """(dimension, Dist after) of a reduce-scatter of the partial `src` whose blocks hold
    each rank's `dst` block, or None: summand k of a group becomes block k along an unsplit
    dimension."""
    for d in range(src.rank):
        if src.tiles[d] != 1 or shape[d] % src.partial or dst.tiles[d] % src.partial:
            continue
        g = np.moveaxis(np.squeeze(src.grid, axis=d), src.rank - 1, d)
        after = Dist.of_grid(g[..., None, :])
        if not gathers(after, dst):
            return d, after
    return None
