"""shard-propagate: spread the shardings present in the entry function to all its values.

Forward and backward to a fixed point by the sharding rules (`propagation`); what
stays unknown is replicated. Constants get no sharding (their users take their blocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Module
from nxcc.passes.sharding.propagation import propagate
from nxcc.passes.sharding.search import given_shardings, strategy_table


@dataclass(frozen=True)
class ShardPropagate:
    """Gives every non-constant value of the entry function a sharding."""

    name: ClassVar[str] = "shard-propagate"
    num_cores: int = 2

    def run(self, module: Module) -> bool:
        fn = module.entry_function
        found = propagate(fn, given_shardings(fn, self.num_cores),
                          strategy_table(fn, self.num_cores, module))
        changed = False
        values = [*fn.params, *(r for op in fn.body for r in op.results)]
        for v in values:
            s = found.get(id(v))
            if s is not None and v.sharding != s:
                v.sharding = s
                changed = True
        return changed
