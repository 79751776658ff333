"""mesh-partition: a global program annotated for a mesh of N devices -> the SPMD program
each of the N ranks runs.

Runs when `Module.mesh_layouts` is set (JAX's lowered text whose shardings name N > 1
devices) and the module is not partitioned yet. In program order, every op of the entry is
emitted at its rank-local shapes as its rule decides (`rules.decide`), its operands first
moved where the rule wants them (`reshard.Resharder`: all-reduce, all-gather over the mesh
axes' replica groups, local slices by partition_id). Parameters become each rank's block of
the input (their layouts as annotated), results each rank's block of the output: the
annotated layout when given, else where the program leaves them (never a pending sum).
A value a sharding constraint places (HLO's Sharding custom-call) is moved there as soon as
it is made, and its users start from there.
The module then carries `Module.spmd` (num_partitions = N), exactly as XLA's partitioned
output does, so the rest of the compiler and the runtime treat it the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.spmd import MeshLayouts, SpmdInfo, SpmdValue, TileLayout
from nxcc.passes.mesh_partition.dist import Dist
from nxcc.passes.mesh_partition.reshard import Resharder
from nxcc.passes.mesh_partition.rules import decide

NOT_FREE = frozenset({ops.partition_id, ops.replica_id, ops.random_bits})


def _layout(layouts: list[TileLayout | None], i: int) -> TileLayout | None:
    return layouts[i] if i < len(layouts) else None


def _check_fits(what: str, v: Value, d: Dist, lay: TileLayout | None) -> None:
    if not d.fits(v.type.shape):
        raise ValueError(f"{what} of shape {list(v.type.shape)}: "
                         f"{lay.text if lay else ''} does not split it into equal blocks "
                         "(uneven shardings are not supported)")


@dataclass(frozen=True)
class MeshPartition:
    """Replaces an annotated entry function by its SPMD form (see the module docstring)."""

    name: ClassVar[str] = "mesh-partition"

    def run(self, module: Module) -> bool:
        mesh = module.mesh_layouts
        if mesh is None or module.spmd is not None:
            return False
        fn = module.entry_function
        new = Function(fn.name, [], [], [], list(fn.result_names))
        b = Builder(module, new)
        n = mesh.world_size
        rs = Resharder(b, n, lambda op: self._emit_whole(b, rs, op, n))
        params = self._params(fn, mesh, new, rs)
        fixed = {id(v): Dist.of_layout(lay, v.type.rank, n) for v, lay in mesh.constraints}
        for p in fn.params:
            if id(p) in fixed:
                rs.move(p, fixed[id(p)], only=True)
        for op in fn.body:
            if self._is_free(op, rs):
                rs.free.update(id(r) for r in op.results)
                continue
            dists = [rs.dist_of(v) or Dist.replicated(v.type.rank, n) for v in op.operands]
            raw = [rs.own.get(id(v)) for v in op.operands]
            d = decide(module, op, dists, n, rs.price, raw)
            operands = [rs.get(v, t) for v, t in zip(op.operands, d.operands, strict=True)]
            made = b.create(op.opdef, operands, d.attrs)
            for old, r, dist in zip(op.results, made.results, d.results, strict=True):
                r.name = old.name
                rs.define(old, r, dist)
            for old, dist in zip(op.results, d.then, strict=True) if d.then else ():
                rs.move(old, dist)
            for old in op.results:
                if id(old) in fixed:
                    rs.move(old, fixed[id(old)], only=True)
        results = []
        for i, r in enumerate(fn.results):
            lay = _layout(mesh.results, i)
            if lay is not None:
                dst = Dist.of_layout(lay, r.type.rank, n)
                _check_fits(f"output {i}", r, dst, lay)
            else:
                dst = rs.dist_of(r) or Dist.replicated(r.type.rank, n)
            new.results.append(rs.get(r, dst))
            results.append(SpmdValue(dst.to_layout(), dst.local_shape(r.type.shape)))
        module.functions[fn.name] = new
        module.spmd = SpmdInfo(n, 1, params, results)
        module.mesh_layouts = None
        return True

    @staticmethod
    def _params(fn: Function, mesh: MeshLayouts, new: Function, rs: Resharder
                ) -> list[SpmdValue]:
        out = []
        for i, p in enumerate(fn.params):
            lay = _layout(mesh.params, i)
            d = Dist.of_layout(lay, p.type.rank, mesh.world_size)
            _check_fits(f"parameter {p.name or i}", p, d, lay)
            local = d.local_shape(p.type.shape)
            v = Value(p.type.with_shape(local), p.name)
            new.params.append(v)
            rs.define(p, v, d)
            out.append(SpmdValue(lay or TileLayout(), local))
        return out

    @staticmethod
    def _is_free(op: Op, rs: Resharder) -> bool:
        d = op.opdef
        return (bool(op.results) and not d.side_effects and d not in NOT_FREE
                and all(id(v) in rs.free for v in op.operands))

    @staticmethod
    def _emit_whole(b: Builder, rs: Resharder, op: Op, n: int) -> list[Value]:
        operands = [rs.get(v, Dist.replicated(v.type.rank, n)) for v in op.operands]
        return b.create(op.opdef, operands, op.attrs).results
