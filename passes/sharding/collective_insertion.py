"""Emitting a partition plan as one SPMD function: per-core shapes, collectives, and
partition_id where a core's work depends on which core it is.

Reshards (`reshard`), from the value's sharding to the one its user needs, on n devices:

=====================  ======================================================================
replicated -> split d  dynamic_slice at partition_id x block size (local)
replicated -> partial  sum: select(partition_id == 0, x, 0); prod: ... 1; max/min/and/or: x
split d -> replicated  all_gather(dimension d)
split d -> split e     all_to_all(split_dimension e, concat_dimension d)
split d -> partial     my block placed in zeros by dynamic_update_slice (local)
partial -> replicated  all_reduce(reduction)
partial -> split d     reduce_scatter(dimension d, reduction)
partial -> partial     all_reduce, then replicated -> partial
=====================  ======================================================================

Every collective gets replica_groups = [[0, ..., n-1]] and its own channel_id (1, 2, ...),
so the NEFF can list them in program order. Each emitted value carries its global sharding.
"""

from __future__ import annotations

import numpy as np

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OpDef
from nxcc.ir.sharding import Sharding
from nxcc.ir.types import TensorType
from nxcc.passes.sharding.partitioning import Plan, reshard_kind
from nxcc.passes.sharding.rules import Strategy

R = Sharding.replicated()
_IDENTITY = {"sum": 0, "prod": 1}
# Names of resharded values: `%w.block`, `%h.reduced`...
_SUFFIX = {"slice": "block", "to_partial": "piece", "all_gather": "gathered",
           "all_reduce": "reduced", "reduce_scatter": "scattered", "all_to_all": "exchanged",
           "split_to_partial": "piece", "reduce_then_partial": "piece"}


class Emitter:
    """Builds the SPMD version of a function from its plan."""

    def __init__(self, module: Module, fn: Function, plan: Plan) -> None:
        self.module = module
        self.plan = plan
        self.n = plan.n
        self.groups = (tuple(range(self.n)),)
        self.channel = 0
        self.new = Function(fn.name, [], result_names=list(fn.result_names))
        self.b = Builder(module, self.new)
        self.reshards: dict[int, dict[Sharding, Value]] = {}
        self._pid: Value | None = None
        self._pids: dict[DType, Value] = {}

    # values

    def define(self, old: Value, new: Value, s: Sharding) -> None:
        """`new` is the local form of `old`, sharded `s`."""
        self.reshards[id(old)] = {s: new}

    def annotate(self, v: Value, s: Sharding) -> Value:
        v.sharding = s
        return v

    def pid(self, dtype: DType = DType.S32) -> Value:
        """partition_id converted to `dtype` (made once per function and dtype)."""
        if self._pid is None:
            self._pid = self.annotate(self.b.op(ops.partition_id, []), R)
            self._pid.name = "pid"
        if dtype not in self._pids:
            self._pids[dtype] = self.annotate(self.b.convert(self._pid, dtype), R)
        return self._pids[dtype]

    def scalar(self, value: float | int | bool, dtype: DType) -> Value:
        return self.annotate(self.b.constant(np.array(value, dtype=dtype.numpy)), R)

    def next_channel(self) -> int:
        self.channel += 1
        return self.channel

    def collective(self, opcode: OpDef, x: Value, attrs: dict, s: Sharding) -> Value:
        attrs = {**attrs, "replica_groups": self.groups, "channel_id": self.next_channel()}
        if opcode is ops.collective_permute:
            attrs.pop("replica_groups")
        return self.annotate(self.b.op(opcode, [x], attrs), s)

    def starts(self, rank: int, dim: int, block: int) -> list[Value]:
        zero = self.scalar(0, DType.S32)
        offset = self.annotate(self.b.multiply(self.pid(), self.scalar(block, DType.S32)), R)
        return [offset if d == dim else zero for d in range(rank)]

    def reshard(self, old: Value, src: Sharding, dst: Sharding) -> Value:
        """The local value of `old` resharded to `dst`, from its form sharded `src` (its
        own, or a reshard made earlier, as the plan says)."""
        made = self.reshards.setdefault(id(old), {})
        if dst in made:
            return made[dst]
        x = made[src]
        kind = reshard_kind(src, dst)
        out = x if kind is None else self._reshard(x, kind, src, dst, old.type)
        if kind is not None and old.name is not None:
            out.name = f"{old.name}.{_SUFFIX.get(kind, 'resharded')}"
        made[dst] = out
        return out

    def _reshard(self, x: Value, kind: str, src: Sharding, dst: Sharding,
                 full: TensorType) -> Value:
        if kind == "slice":
            d = dst.split_dim
            assert d is not None
            local = dst.local_shape(full.shape)
            starts = self.starts(full.rank, d, local[d])
            return self.annotate(self.b.op(ops.dynamic_slice, [x, *starts],
                                           {"slice_sizes": local}), dst)
        if kind == "to_partial":
            return self.to_partial(x, dst)
        if kind == "all_gather":
            return self.collective(ops.all_gather, x, {"dimension": src.split_dim}, dst)
        if kind == "all_reduce":
            return self.collective(ops.all_reduce, x, {"reduction": src.reduction}, dst)
        if kind == "reduce_scatter":
            return self.collective(ops.reduce_scatter, x, {"dimension": dst.split_dim,
                                                         "reduction": src.reduction}, dst)
        if kind == "all_to_all":
            return self.collective(ops.all_to_all, x, {"split_dimension": dst.split_dim,
                                                     "concat_dimension": src.split_dim}, dst)
        if kind == "split_to_partial":
            d = src.split_dim
            assert d is not None
            zeros = self.annotate(self.b.splat(0, full), R)
            starts = self.starts(full.rank, d, x.type.shape[d])
            return self.annotate(self.b.op(ops.dynamic_update_slice, [zeros, x, *starts]), dst)
        if kind == "reduce_then_partial":
            whole = self.collective(ops.all_reduce, x, {"reduction": src.reduction}, R)
            return self.to_partial(whole, dst)
        raise AssertionError(kind)

    def to_partial(self, x: Value, dst: Sharding) -> Value:
        """A replicated value as the pieces of a pending `dst.reduction`."""
        if dst.reduction not in _IDENTITY:
            return x  # max, min, and, or of equal copies is the copy
        first = self.annotate(self.b.op(ops.compare, [self.pid(DType.U32),
                                                    self.scalar(0, DType.U32)],
                                        {"direction": "EQ"}), R)
        other = self.annotate(self.b.splat(_IDENTITY[dst.reduction], x.type), R)
        return self.annotate(self.b.op(ops.select, [first, x, other]), dst)

    # ops

    def emit_op(self, operands: list[Value], s: Strategy, op) -> list[Value]:
        attrs = dict(s.attrs) if s.attrs is not None else dict(op.attrs)
        results = self.b.ops(op.opcode, operands, attrs)
        for r, want in zip(results, s.results, strict=True):
            self.annotate(r, want)
        if s.emit == "iota_offset":
            results = [self.iota_offset(results[0], op.attrs["dimension"])]
        elif s.emit == "reverse_permute":
            pairs = tuple((k, self.n - 1 - k) for k in range(self.n))
            results = [self.collective(ops.collective_permute, results[0],
                                       {"source_target_pairs": pairs}, s.results[0])]
        for r, want, old in zip(results, s.results, op.results, strict=True):
            expected = want.local_shape(old.type.shape)
            assert r.type.shape == expected, (op.opcode, s.name, r.type, expected)
            r.name = old.name
            self.annotate(r, want)
        return results

    def iota_offset(self, local: Value, dim: int) -> Value:
        t = local.type
        offset = self.annotate(self.b.multiply(self.pid(t.dtype),
                                               self.scalar(t.shape[dim], t.dtype)), R)
        wide = self.annotate(self.b.op(ops.broadcast_in_dim, [offset],
                                       {"shape": t.shape, "broadcast_dimensions": ()}), R)
        return self.b.add(local, wide)

    def run(self, fn: Function) -> Function:
        for p, s in zip(fn.params, self.plan.params, strict=True):
            q = Value(TensorType(p.type.dtype, s.local_shape(p.type.shape)), p.name)
            q.sharding = s
            self.new.params.append(q)
            self.define(p, q, s)
        for step in self.plan.ops:
            op, strategy = step.op, step.strategy
            if op.opdef is ops.constant:
                r = self.b.op(ops.constant, [], op.attrs)
                r.name = op.result.name
                self.define(op.result, self.annotate(r, R), R)
                continue
            operands = [self.reshard(v, src, dst) for v, src, dst in
                        zip(op.operands, step.sources, strategy.operands, strict=True)]
            for old, new, want in zip(op.results, self.emit_op(operands, strategy, op),
                                      strategy.results, strict=True):
                self.define(old, new, want)
        for r, src, dst in zip(fn.results, self.plan.output_sources, self.plan.outputs,
                               strict=True):
            self.new.results.append(self.reshard(r, src, dst))
        return self.new


def emit_spmd(module: Module, fn: Function, plan: Plan) -> Function:
    """The SPMD function of `fn` under `plan` (not yet in the module)."""
    return Emitter(module, fn, plan).run(fn)

