"""shard-choose: pick the shardings of the matrix ops with the cost model.

Runs `search.choose` on the entry function for `num_cores` devices and writes the
seeds of the cheapest choice (each dot_general's and convolution's operands and results) as
value shardings; `shard-propagate` spreads them to the rest. Shardings already present are
kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Module, Value
from nxcc.passes.sharding.search import choose


@dataclass(frozen=True)
class ShardChoose:
    """Annotates the anchors' operands and results with the cheapest shardings found."""

    name: ClassVar[str] = "shard-choose"
    num_cores: int = 2

    def run(self, module: Module) -> bool:
        fn = module.entry_function
        best = choose(fn, self.num_cores, module)
        by_id: dict[int, Value] = {id(v): v for v in fn.params}
        by_id.update((id(r), r) for op in fn.body for r in op.results)
        changed = False
        for key, s in best.seeds.items():
            v = by_id[key]
            if v.sharding != s:
                v.sharding = s
                changed = True
        return changed
