"""The -lnc stage of the driver: shard the optimised module over the physical cores of one
logical core and make one program per core.

At LNC 1 the module is the one program. At LNC N > 1 the sharding passes run
(`passes.registry.sharding_pipeline`: shard-choose, shard-propagate, shard-partition, cse)
under the same pass manager rules (verified, printable with --print-ir-after, timed), then
the SPMD module is specialized to each core (`passes.sharding.specialize`).

A global program whose shardings name a mesh of N > 1 devices (`Module.mesh_layouts`:
JAX's lowered text) is partitioned for N ranks at LNC 1 (`mesh_passes`: the mesh-partition
pass, first in the pipeline) and then runs as an SPMD program; at LNC N > 1 its shardings
guide the sharding passes over the cores instead.

A program already partitioned for N ranks (`Module.spmd`: XLA's partitioned HLO) is one
program every rank runs; it is not sharded again, so at LNC N > 1 it is an argument error
(NCC_EARG001) that says to compile it with -lnc 1.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nxcc.driver.errors import CompileError
from nxcc.errors import BAD_ARGUMENT
from nxcc.ir.core import Module
from nxcc.passes.base import Pass
from nxcc.passes.manager import PassManager
from nxcc.passes.mesh_partition.partition import MeshPartition
from nxcc.passes.registry import sharding_pipeline
from nxcc.passes.sharding.specialize import specialize

log = logging.getLogger("nxcc.compiler")


def mesh_passes(module: Module, lnc: int) -> list[Pass]:
    """The passes run before the pipeline for `module` at `lnc`: mesh-partition for an
    annotated global program at LNC 1, else none."""
    return [MeshPartition()] if module.mesh_layouts is not None and lnc <= 1 else []


def core_programs(module: Module, lnc: int, print_after: frozenset[str],
                  emit: Callable[[str], None]) -> tuple[list[Module], list]:
    """(one module per physical core, the sharding passes' timings); PassFailure on error,
    CompileError for an SPMD program at LNC > 1."""
    if lnc <= 1:
        return [module], []
    if module.spmd is not None:
        ranks = module.spmd.world_size
        raise CompileError(
            BAD_ARGUMENT, f"this is an SPMD program (already partitioned"
            f"{f' for {ranks} ranks' if ranks else ''}: collectives with replica groups): it "
            f"is one program that every rank runs, not sharded again at -lnc {lnc}; compile "
            "it with -lnc 1 and run it with neuronx-cc run --world-size N (on trn2 also "
            "NEURON_LOGICAL_NC_CONFIG=1)")
    for note in module.mesh_layouts.lnc_notes if module.mesh_layouts else ():
        log.warning("%s", note)
    manager = PassManager(sharding_pipeline(lnc), print_after=print_after, emit=emit)
    manager.run(module)
    return [specialize(module, core) for core in range(lnc)], manager.timings
