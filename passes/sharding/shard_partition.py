"""shard-partition: rewrite the entry function into its SPMD form for `num_cores` cores.

Plans every op with the shardings on the values as hints (`partitioning`), then emits the
per-core program (`collective_insertion`): every op at its per-core shape, a collective placeholder
wherever an operand's sharding is not what its user needs, and partition_id where a core's
work depends on its index (taking its block of a replicated value, iota offsets...).
Parameters become each core's block of the input, results each core's block of the output
(never partial); their shardings say which block, so the runtime can hand out the inputs
and assemble the outputs. `specialize` (sharding_specialize) then makes one program per core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Module
from nxcc.passes.sharding.collective_insertion import emit_spmd
from nxcc.passes.sharding.partitioning import plan_function
from nxcc.passes.sharding.search import given_shardings, strategy_table


@dataclass(frozen=True)
class ShardPartition:
    """Replaces the entry function by its SPMD partitioned form."""

    name: ClassVar[str] = "shard-partition"
    num_cores: int = 2

    def run(self, module: Module) -> bool:
        if self.num_cores == 1:
            return False
        fn = module.entry_function
        plan = plan_function(fn, given_shardings(fn, self.num_cores), self.num_cores,
                             strategy_table(fn, self.num_cores, module))
        module.functions[fn.name] = emit_spmd(module, fn, plan)
        return True
