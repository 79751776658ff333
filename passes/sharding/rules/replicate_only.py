"""Ops whose only sharding rule is "replicate": every operand whole, every device computes
the whole result. Correct for any op, and the documented choice for:

- gather, scatter: data-dependent addressing (an index may point into any block);
- call, while, conditional: their computations run whole on every device;
- partition_id, replica_id: per-device values, never split;
- the collectives already in a program (all_reduce, all_gather, reduce_scatter,
  all_to_all, collective_permute) and point-to-point transfers (send, recv and their done
  halves): they keep their own replica groups and pairs.
"""

from __future__ import annotations

from nxcc.ir.core import Module, Op
from nxcc.passes.sharding.rules import Strategy, replicate, rule

REPLICATE_ONLY = ("gather", "scatter", "call", "while", "conditional", "partition_id",
                  "replica_id", "all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                  "collective_permute", "send", "send_done", "recv", "recv_done")


@rule(*REPLICATE_ONLY)
def replicate_only(op: Op, n: int, module: Module | None) -> list[Strategy]:
    return [replicate(op)]
