"""Ops whose only sharding rule is "replicate": every operand whole, every device computes
the whole result. Correct for any op, and the documented choice for:

- gather, scatter: data-dependent addressing (an index may point into any block);
- call, while, conditional: their computations run whole on every device;
- partition_id, replica_id: per-device values, never split;
- random_bits: every device draws the whole tensor from the same key and counter, so a
  replicated random tensor holds the same numbers everywhere;
- the collectives already in a program (all_reduce, all_gather, reduce_scatter,
  all_to_all, collective_permute): they keep their own replica groups.
"""

from __future__ import annotations

from nxcc.ir.core import Module, Op
from nxcc.passes.sharding.rules import Strategy, replicate, rule

REPLICATE_ONLY = ("gather", "scatter", "call", "while", "conditional", "partition_id",
                  "replica_id", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                  "collective_permute", "random_bits")


@rule(*REPLICATE_ONLY)
def replicate_only(op: Op, n: int, module: Module | None) -> list[Strategy]:
    return [replicate(op)]
