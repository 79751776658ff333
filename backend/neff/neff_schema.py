"""The declared schema of a NEFF's JSON: the manifest (`neff.json`) and each per-core
program (`sgNN/program.json`), in one place.

What a single value can say is declared here (types, required keys, ranges, dtype names,
shape bounds). What needs two values at once (a slot index inside its function, a weight
named by a slot that the manifest lists, output counts of manifest and program, buffer
extents inside the arena, shape x dtype against the size limits) is checked by
`backend.runtime.checked_neff`, after these schemas pass.

Manifest (``neff.json``)::

    {"format": str?, "name": str?, "target": str?, "lnc": 1|2?,
     "inputs": [TENSOR], "outputs": [TENSOR], "subgraphs": [SUBGRAPH] (1..MAX_PROGRAMS),
     "weights": {"files": {name: member}, "bytes": int?},
     "collectives": [COLLECTIVE]?, "compiler": {...}?, "spmd": SPMD | null?}
    TENSOR     = {"name": str, "dtype": DTYPE, "shape": SHAPE}
    COLLECTIVE = {"id": int, "kind": KIND, "dtype": DTYPE, "shape": SHAPE, "bytes": int,
                  "replica_groups": [[int]] (PAIRED_KINDS: "source_target_pairs":
                  [[int, int]]), "reduction": str?, "channel_id": int?, "subgraphs": [str]?,
                  "async": bool? (split into a start and a done)}
    SUBGRAPH   = {"name": str, "program": member, "core": int?, "ir": member?, "ops": int?,
                  "flops": int?, "inputs": [BLOCK]?, "outputs": [BLOCK]?}
    BLOCK      = {"name": str, "start": [int >= 0], "shape": SHAPE}

Program (``sgNN/program.json``)::

    {"entry": str, "functions": {name: FUNCTION}}
    FUNCTION    = {"slots": [SLOT], "params": [slot], "results": [slot], "arena_bytes": int,
                   "instructions": [INSTRUCTION], "binary_opcode": str | null?}
    SLOT        = {"kind": "param"|"buffer"|"weight"|"splat", "dtype": DTYPE, "shape": SHAPE,
                   "index": int (param), "offset": int (buffer), "name": str (weight),
                   "value": ATTR (splat), "view_of": slot? and "strides": [int >= 0]?
                   (a buffer viewing another slot's: byte strides unless C-contiguous)}
    INSTRUCTION = {"op": str, "args": [slot], "outs": [slot], "attrs": {name: ATTR}}
    ATTR        = null | bool | int | float | str | [ATTR] | {"f": str} | {"dtype": DTYPE}
                  | {"symbol": function} | {"weight": name}
"""

from __future__ import annotations

from nxcc.backend.neff.json_schema import (
    AnyValue,
    Bool,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Num,
    Obj,
    SchemaError,
    Spec,
    Str,
)
from nxcc.backend.neff.limits import MAX_ARENA_BYTES, MAX_DIM, MAX_PROGRAMS, MAX_RANK
from nxcc.ir.dtypes import DType

COLLECTIVE_KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                    "collective_permute", "send", "recv_done")
"""A collective split into a start and a done keeps its kind and says `"async": true`."""
PAIRED_KINDS = ("collective_permute", "send", "recv_done")
"""Kinds that name source-target pairs; the others name replica groups."""
SLOT_KINDS = ("param", "buffer", "weight", "splat")
MAX_ATTR_DEPTH = 8

DTYPE = Str([d.value for d in DType], label="a known dtype name")
SHAPE = ListOf(Int(0, MAX_DIM), max_len=MAX_RANK)
NAME = Str()
COUNT = Int(0)

TENSOR = Obj({"name": NAME, "dtype": DTYPE, "shape": SHAPE})
BLOCK = Obj({"name": NAME, "start": ListOf(Int(0, MAX_DIM), max_len=MAX_RANK),
             "shape": SHAPE})
SUBGRAPH = Obj({"name": NAME, "program": NAME},
               {"core": COUNT, "ir": NAME, "ops": COUNT, "flops": Num(),
                "inputs": ListOf(BLOCK), "outputs": ListOf(BLOCK)})
COLLECTIVE = Obj({"id": COUNT, "kind": Str(COLLECTIVE_KINDS), "dtype": DTYPE,
                  "shape": SHAPE, "bytes": COUNT},
                 {"reduction": NAME, "channel_id": Int(), "subgraphs": ListOf(NAME),
                  "replica_groups": ListOf(ListOf(COUNT)),
                  "source_target_pairs": ListOf(ListOf(COUNT, 2, 2)),
                  "dimension": COUNT, "split_dimension": COUNT, "concat_dimension": COUNT,
                  "async": Bool()})
LAYOUT = Obj({}, {"text": NAME, "tiles": ListOf(Int(1, MAX_DIM), max_len=MAX_RANK),
                  "devices": ListOf(COUNT), "copies": Int(1), "owner": AnyValue()})
SPMD_TENSOR = Obj({"name": NAME, "shape": SHAPE, "local_shape": SHAPE},
                  {"layout": Nullable(LAYOUT)})
SPMD = Obj({"num_partitions": Int(1), "replica_count": Int(1),
            "inputs": ListOf(SPMD_TENSOR), "outputs": ListOf(SPMD_TENSOR)},
           {"world_size": Nullable(Int(1))})

MANIFEST = Obj(
    {"inputs": ListOf(TENSOR), "outputs": ListOf(TENSOR),
     "subgraphs": ListOf(SUBGRAPH, 1, MAX_PROGRAMS),
     "weights": Obj({"files": MapOf(NAME)}, {"bytes": COUNT})},
    {"format": NAME, "name": NAME, "target": NAME, "lnc": Int(1, 2),
     "collectives": ListOf(COLLECTIVE), "compiler": MapOf(AnyValue()),
     "spmd": Nullable(SPMD)},
)


class AttrSpec(Spec):
    """An encoded attribute value (`backend.program.attr_codec`), nested at most
    MAX_ATTR_DEPTH lists deep."""

    what = "an attribute value"
    _TAGS = {"f": Str(max_len=64), "dtype": DTYPE, "symbol": NAME, "weight": NAME}

    def check(self, value: object, path: str, depth: int = 0) -> None:
        if value is None or type(value) in (bool, int, float, str):
            return
        if type(value) is list:
            if depth >= MAX_ATTR_DEPTH:
                raise SchemaError(path, f"attribute nested deeper than {MAX_ATTR_DEPTH}")
            for i, v in enumerate(value):
                self.check(v, f"{path}[{i}]", depth + 1)
            return
        if type(value) is dict and len(value) == 1:
            (tag, inner), = value.items()
            if tag in self._TAGS:
                self._TAGS[tag].check(inner, f"{path}.{tag}")
                if tag == "f":
                    _float_text(inner, f"{path}.f")
                return
        raise self.wrong(value, path)


def _float_text(text: object, path: str) -> None:
    try:
        float(str(text))
    except ValueError:
        raise SchemaError(path, f"expected a float's text, found {text!r}") from None


ATTR = AttrSpec()
SLOT = Obj({"kind": Str(SLOT_KINDS), "dtype": DTYPE, "shape": SHAPE},
           {"index": COUNT, "offset": Int(0, MAX_ARENA_BYTES), "name": NAME, "value": ATTR,
            "view_of": COUNT, "strides": ListOf(Int(0, MAX_ARENA_BYTES), max_len=MAX_RANK)})
SLOT_REQUIRES = {"param": "index", "buffer": "offset", "weight": "name", "splat": "value"}
INSTRUCTION = Obj({"op": NAME, "args": ListOf(COUNT), "outs": ListOf(COUNT),
                   "attrs": MapOf(ATTR)})
FUNCTION = Obj({"slots": ListOf(SLOT), "params": ListOf(COUNT), "results": ListOf(COUNT),
                "arena_bytes": Int(0, MAX_ARENA_BYTES), "instructions": ListOf(INSTRUCTION)},
               {"binary_opcode": Nullable(NAME)})
PROGRAM = Obj({"entry": NAME, "functions": MapOf(FUNCTION)})
