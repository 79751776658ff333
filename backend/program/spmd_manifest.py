"""The NEFF manifest's ``spmd`` section: an SPMD program (one program run by N ranks) and
the layout of each of its inputs and outputs over the ranks.

::

    "spmd": {"num_partitions": 8, "replica_count": 1, "world_size": 8,
             "inputs": [{"name": "param", "shape": [8, 16], "local_shape": [4, 16],
                         "layout": {"text": "{devices=[2,1,4]<=[8] last_tile_dim_replicate}",
                                    "tiles": [2, 1], "devices": [0, ..., 7], "copies": 4}}],
             "outputs": [{"name": "output0", "shape": [4, 16], "local_shape": [4, 16],
                          "layout": null}]}

`shape` is the global shape (`local_shape`, one rank's, times the tiles); a null layout is
none written (an input is then replicated; an output is assembled as the runtime is told,
else taken as replicated). `world_size` is null when the program does not say. The
manifest's top-level ``inputs``/``outputs`` stay the per-rank program's signature. A NEFF
with this section has the header's SPMD feature bit.
"""

from __future__ import annotations

from nxcc.ir.core import Module
from nxcc.ir.spmd import SpmdValue


def _entry(name: str, v: SpmdValue) -> dict:
    return {"name": name, "shape": list(v.global_shape), "local_shape": list(v.local_shape),
            "layout": v.layout.to_json() if v.layout is not None else None}


def spmd_section(module: Module, output_names: list[str]) -> dict | None:
    """The ``spmd`` section of `module`'s manifest (its outputs named `output_names`), or
    None for a program that is not SPMD."""
    info = module.spmd
    if info is None:
        return None
    fn = module.entry_function
    return {"num_partitions": info.num_partitions, "replica_count": info.replica_count,
            "world_size": info.world_size,
            "inputs": [_entry(p.name or f"input{i}", v)
                       for i, (p, v) in enumerate(zip(fn.params, info.params, strict=True))],
            "outputs": [_entry(n, v)
                        for n, v in zip(output_names, info.results, strict=True)]}
