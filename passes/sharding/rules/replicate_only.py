"""Ops whose only sharding rule is "replicate": every operand whole, every device computes
the whole result. Correct for any op, and the documented choice for:

- gather, scatter: data-dependent addressing (an index may point into any block);
- call, while, conditional: their computations run whole on every device;
- partition_id, replica_id: per-device values, never split;
- random_bits: every device draws the whole tensor from the same key and counter, so a
  replicated random tensor holds the same numbers everywhere;
- optimization_barrier and tp_copy: identities that mark where recomputation reads from
  and where a tensor-parallel region begins (the decoder frontend's own explicit plan);
- the collectives already in a program (all_reduce, all_gather, reduce_scatter,
  all_to_all, collective_permute) and point-to-point transfers (send, recv and their done
  halves): they keep their own replica groups and pairs;
- fused_elementwise, fused_convolution, softmax, layer_norm: made by the fusion pass after
  partitioning, on each core's own shapes.
"""

from __future__ import annotations

from nxcc.ir import ops
from nxcc.ir.core import Module, Op
from nxcc.ir.ops.collective import ASYNC_OPS
from nxcc.passes.sharding.rules.strategy import Strategy, replicate, rule

REPLICATE_ONLY = (ops.gather, ops.scatter, ops.call, ops.while_, ops.conditional,
                  ops.partition_id, ops.replica_id, ops.all_reduce, ops.all_gather,
                  ops.reduce_scatter, ops.all_to_all, ops.collective_permute, ops.send,
                  ops.send_done, ops.recv, ops.recv_done, *ASYNC_OPS, ops.random_bits,
                  ops.tp_copy, ops.optimization_barrier, ops.fused_elementwise,
                  ops.fused_convolution, ops.softmax, ops.layer_norm)


@rule(*REPLICATE_ONLY)
def replicate_only(op: Op, n: int, module: Module | None) -> list[Strategy]:
    return [replicate(op)]
