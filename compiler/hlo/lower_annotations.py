"""The entry's `sharding=` annotations, after lowering: what the HLO module says about
placement.

Two kinds of module (`annotate` tells them apart):

- **An SPMD program** (XLA's partitioned output: the header says ``num_partitions`` or
  ``replica_count`` > 1, or the program holds collectives or partition_id/replica_id): one
  program that N ranks run, its parameters at per-rank shapes. The parameter and root
  shardings become `Module.spmd` (`ir.spmd.SpmdInfo`: the layout of each entry parameter and
  result over the ranks), which the NEFF's manifest records so the runtime can split global
  inputs and assemble global outputs. A sharding that gives no per-rank block (``{manual}``)
  is a warning and the value is taken as replicated.
- **An annotated global program** (JAX's lowered text under a mesh): the parameter
  shardings become `Value.sharding` (`compiler.hlo.sharding_map.to_ir_sharding`), which the
  sharding passes keep fixed at ``-lnc 2``. What one mesh axis cannot express is a warning
  and the parameter is replicated. The root's annotation is not attached: how the outputs
  end is left to the cost model (a pending sum is all-reduced or reduce-scattered once at
  the end), and the runtime assembles whole outputs from whatever blocks the cores hold.
  When the tiled shardings name a mesh of N > 1 devices, the full layouts of the entry's
  parameters and results are also kept as `Module.mesh_layouts` (`ir.spmd.MeshLayouts`),
  from which the mesh-partition pass makes the SPMD program for N ranks (at ``-lnc 1``).
"""

from __future__ import annotations

import logging

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.errors import HloError
from nxcc.compiler.hlo.nodes import Attribute, HloModule, Instruction
from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Value
from nxcc.ir.sharding_notation.hlo_sharding import Sharding as HloSharding
from nxcc.ir.sharding_notation.tile_layout import per_leaf, to_ir_sharding, to_layout
from nxcc.ir.spmd import MeshLayouts, SpmdInfo, SpmdValue, TileLayout

log = logging.getLogger("nxcc.compiler.hlo")

SPMD_OPS = frozenset({ops.all_reduce, ops.all_gather, ops.reduce_scatter, ops.all_to_all,
                      ops.collective_permute, ops.partition_id, ops.replica_id})


def header_int(hlo: HloModule, name: str) -> int:
    """An integer attribute of the module header (1 when absent or not an integer)."""
    a = hlo.attrs.get(name)
    try:
        return int(a.raw) if a is not None else 1
    except ValueError:
        return 1


def is_spmd(hlo: HloModule, module: Module) -> bool:
    """True for a program already partitioned over ranks (see the module docstring)."""
    if header_int(hlo, "num_partitions") > 1 or header_int(hlo, "replica_count") > 1:
        return True
    return any(op.opdef in SPMD_OPS for fn in module.functions.values() for op in fn.body)


def _leaf_shardings(instr: Instruction, hlo: HloModule, values: list[Value]
                    ) -> list[tuple[Value, HloSharding | None, str | None]]:
    """(IR value, its HLO sharding, its text) for each array leaf of `instr` (tokens are no
    IR values; `values` are the non-token leaves in order)."""
    attr: Attribute | None = instr.attrs.get("sharding")
    leaves = instr.shape.leaves()
    s = attr.value if attr is not None and isinstance(attr.value, HloSharding) else None
    try:
        shardings = per_leaf(s, len(leaves))
    except ValueError as exc:
        raise HloError(f"{instr.name}: {exc}", hlo.source,
                       attr.offset if attr else instr.offset, E.SEMANTIC) from None
    whole = attr.raw if attr is not None and s is not None and s.kind != "tuple" else None
    kept = [sh for leaf, sh in zip(leaves, shardings, strict=True) if leaf.dtype != "token"]
    return [(v, sh, whole) for v, sh in zip(values, kept, strict=True)]


def _entry_leaves(hlo: HloModule, fn: Function, params: list[Instruction]
                  ) -> tuple[list, list]:
    out_params = []
    i = 0
    for p in params:
        n = sum(1 for leaf in p.shape.leaves() if leaf.dtype != "token")
        out_params.extend(_leaf_shardings(p, hlo, fn.params[i:i + n]))
        i += n
    results = _leaf_shardings(hlo.entry.root, hlo, fn.results)
    return out_params, results


def annotate(hlo: HloModule, module: Module, params: list[Instruction],
             constraints: list[tuple[Value, Attribute]] | None = None) -> None:
    """Record the entry's shardings on `module` (see the module docstring). `params` are
    the entry's parameter instructions in parameter order; `constraints` the values that
    Sharding custom-calls constrain, with their ``sharding=`` (kept for mesh-partition)."""
    fn = module.entry_function
    leaf_params, leaf_results = _entry_leaves(hlo, fn, params)
    if is_spmd(hlo, module):
        module.spmd = SpmdInfo(header_int(hlo, "num_partitions"),
                               header_int(hlo, "replica_count"),
                               [_spmd_value(v, s, t, "parameter") for v, s, t in leaf_params],
                               [_spmd_value(v, s, t, "output") for v, s, t in leaf_results])
        _check_world(hlo, module.spmd)
        return
    entry = {id(v) for op in fn.body for v in op.results} | {id(p) for p in fn.params}
    hints = [(v, a.value, a.raw) for v, a in constraints or () if id(v) in entry]
    mesh = module.mesh_layouts = _mesh_layouts(hlo, leaf_params, leaf_results, hints)
    for v, s, text in leaf_params:
        sharding, why = to_ir_sharding(s, v.type.rank, text)
        if why:
            note = f"sharding of {v.name} is taken as replicated: {why}"
            if mesh is None:
                log.warning("%s", note)
            else:  # said only if the cores of a logical core are what is sharded over
                mesh.lnc_notes.append(note)
        if sharding is not None:
            v.sharding = sharding


def _layouts(leaves: list) -> list[TileLayout | None]:
    return [to_layout(s, v.type.rank, t)[0] for v, s, t in leaves]


def _mesh_layouts(hlo: HloModule, leaf_params: list, leaf_results: list, hints: list
                  ) -> MeshLayouts | None:
    """The mesh the tiled shardings name (None when none names more than one device);
    HloError when two name meshes of different sizes."""
    params, results = _layouts(leaf_params), _layouts(leaf_results)
    kept = [(v, lay) for v, lay in zip([v for v, _, _ in hints], _layouts(hints), strict=True)
            if lay is not None]
    sizes = {lay.num_devices for lay in [*params, *results, *(k for _, k in kept)]
             if lay is not None and lay.tiles}
    if len(sizes) > 1:
        raise HloError(f"expected the shardings to name one device mesh, found meshes of "
                       f"{', '.join(map(str, sorted(sizes)))} devices", hlo.source, hlo.offset,
                       E.SEMANTIC)
    if not sizes or max(sizes) < 2:
        return None
    world = sizes.pop()
    for lay in [*params, *results, *(k for _, k in kept)]:
        if lay is not None:
            try:
                lay.check(world)
            except ValueError as exc:
                raise HloError(str(exc), hlo.source, hlo.offset, E.SEMANTIC) from None
    return MeshLayouts(world, params, results, constraints=kept)


def _spmd_value(v: Value, s: HloSharding | None, text: str | None, what: str) -> SpmdValue:
    layout, why = to_layout(s, v.type.rank, text)
    if why:
        log.warning("%s %s is taken as replicated: %s", what, v.name, why)
    return SpmdValue(layout, tuple(v.type.shape))


def _check_world(hlo: HloModule, info: SpmdInfo) -> None:
    world = info.world_size
    if world is None:
        return
    for v in [*info.params, *info.results]:
        if v.layout is None:
            continue
        try:
            v.layout.check(world, len(v.local_shape))
        except ValueError as exc:
            raise HloError(f"expected shardings over the module's {world} partitions x "
                           f"replicas, found {exc}", hlo.source, hlo.offset, E.SEMANTIC
                           ) from None
