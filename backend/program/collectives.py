"""The NEFF manifest's view of a partitioned program: collective placeholders and the block
of each input and output a core reads and writes.

A collective entry says what is communicated, never how (the runtime binds an algorithm to
the placement at load)::

    {"id": 0, "kind": "all_reduce", "reduction": "sum", "replica_groups": [[0, 1]],
     "dtype": "f32", "shape": [4, 10], "bytes": 160, "channel_id": 1,
     "subgraphs": ["sg00", "sg01"]}

`shape` and `bytes` are one rank's operand; `dimension`, `split_dimension`,
`concat_dimension` and `source_target_pairs` appear for the kinds that have them. Point-to-point
transfers appear as `send` (on every rank; the pairs' sources send) and `recv_done` (the
targets receive), with their pairs. A collective split into a start and a done (the
latency-hiding pass, HLO's `-start`/`-done`) is one entry, at its start, of its kind with
`"async": true` (the done moves no data). The programs are SPMD: the i-th collective of every core
is the same placeholder.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints2
from nxcc.ir.core import Module, Value
from nxcc.ir.opdef import OpDef
from nxcc.ir.ops.collective import ASYNC_PAIRS
from nxcc.ir.rewrite import reachable_functions

#: The ops a manifest entry names as its kind (each a synchronous op).
KIND_OPS: tuple[OpDef, ...] = (ops.all_reduce, ops.all_gather, ops.reduce_scatter,
                               ops.all_to_all, ops.collective_permute, ops.send, ops.recv_done)
#: each collective's start -> the op its entry names.
START_KINDS: dict[OpDef, OpDef] = {start: kind for kind, (start, _) in ASYNC_PAIRS.items()}
#: The ops that make a manifest entry.
COLLECTIVE_OPS: frozenset[OpDef] = frozenset((*KIND_OPS, *START_KINDS))
#: Kinds that move data between (source, target) pairs rather than within replica groups.
PAIRED: tuple[OpDef, ...] = (ops.collective_permute, ops.send, ops.recv_done)
#: The kinds as the manifest writes them (the ops' text names).
KINDS = tuple(op.name for op in KIND_OPS)
PAIRED_OPS = tuple(op.name for op in PAIRED)
_EXTRA = ("reduction", "dimension", "split_dimension", "concat_dimension")


def collectives_of(module: Module) -> list[dict]:
    """The collectives of `module` (entry function first, then what it calls), in order."""
    found = []
    for name in reachable_functions(module):
        for op in module.functions[name].body:
            opdef = op.opdef
            if opdef not in COLLECTIVE_OPS:
                continue
            # the data moved: a send's operand, a receive's result
            operand = op.results[0].type if opdef is ops.recv_done else op.operands[0].type
            kind = START_KINDS.get(opdef, opdef)
            entry: dict = {"kind": kind.name}
            if kind is not opdef:
                entry["async"] = True
            for key in _EXTRA:
                if key in op.attrs:
                    entry[key] = op.attrs[key]
            if kind in PAIRED:
                pairs = attr_ints2(op.attrs, "source_target_pairs")
                entry["source_target_pairs"] = [list(p) for p in pairs]
            else:
                groups = attr_ints2(op.attrs, "replica_groups")
                entry["replica_groups"] = [list(g) for g in groups]
            entry.update(dtype=operand.dtype.value, shape=list(operand.shape),
                         bytes=operand.nbytes if kind in PAIRED
                         else sum(v.type.nbytes for v in op.operands),
                         channel_id=op.attrs.get("channel_id", 0))
            found.append(entry)
    return found


def manifest_collectives(core_modules: list[Module]) -> list[dict]:
    """One entry per collective placeholder, naming the subgraphs that take part."""
    merged: list[dict] = []
    for core, module in enumerate(core_modules):
        for i, entry in enumerate(collectives_of(module)):
            if i == len(merged):
                merged.append({"id": i, **entry, "subgraphs": []})
            merged[i]["subgraphs"].append(f"sg{core:02d}")
    return merged


def global_shape(v: Value) -> tuple[int, ...]:
    """The whole (logical core's) shape of a per-core parameter or result."""
    return v.sharding.global_shape(v.type.shape) if v.sharding is not None else v.type.shape


def block_entry(name: str, v: Value, core: int) -> dict:
    """Where core `core`'s `v` lies in the whole tensor: start and shape per dimension."""
    spans = (v.sharding.block(global_shape(v), core) if v.sharding is not None
             else tuple((0, d) for d in v.type.shape))
    return {"name": name, "start": [a for a, _ in spans], "shape": list(v.type.shape)}
