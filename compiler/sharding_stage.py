"""The -lnc stage of the driver: shard the optimised module over the physical cores of one
logical core and make one program per core.

At LNC 1 the module is the one program. At LNC N > 1 the sharding passes run
(`passes.registry.sharding_pipeline`: shard-choose, shard-propagate, shard-partition, cse)
under the same pass manager rules (verified, printable with --print-ir-after, timed), then
the SPMD module is specialized to each core (`passes.sharding_specialize`).
"""

from __future__ import annotations

from collections.abc import Callable

from ir.core import Module
from passes.manager import PassManager
from passes.registry import sharding_pipeline
from passes.sharding_specialize import specialize


def core_programs(module: Module, lnc: int, print_after: frozenset[str],
                  emit: Callable[[str], None]) -> tuple[list[Module], list]:
    """(one module per physical core, the sharding passes' timings); PassFailure on error."""
    if lnc <= 1:
        return [module], []
    manager = PassManager(sharding_pipeline(lnc), print_after=print_after, emit=emit)
    manager.run(module)
    return [specialize(module, core) for core in range(lnc)], manager.timings
