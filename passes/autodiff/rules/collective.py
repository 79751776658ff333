"""Gradient rules of the collectives, under the tensor-parallel convention (Megatron's).

A program differentiated with collectives in it runs on every rank of their replica groups,
and its loss is *replicated*: every rank computes the same loss value. The cotangent a rank
holds for a value replicated across the group is then the whole cotangent, the same on every
rank; for a value split (or partially summed) across the group, the rank's share of it.
Under that convention the rules are the conjugate pairs:

- all_reduce (sum): the identity. Its operands are the ranks' partial sums of a replicated
  result whose cotangent every rank already holds whole. Other reductions have no rule here
  (a max used as a log-sum-exp shift is excluded with `stop_gradients` instead).
- tp_copy (identity forward): an all_reduce (sum) of the cotangent over the same groups:
  each rank's cotangent is only its own branch's share of the replicated input's.
- all_gather: a reduce_scatter (sum) along the same dimension: the gathered tensor feeds
  each rank's own (column-parallel) computation, and each block's cotangent is the sum of
  the ranks' shares.
- reduce_scatter (sum): an all_gather of the block cotangents.
- optimization_barrier: the identity.
"""

from __future__ import annotations

from collections.abc import Sequence

from nxcc.ir import ops
from nxcc.ir.attributes import attr_of
from nxcc.ir.core import Op, Value
from nxcc.passes.autodiff.context import GradContext
from nxcc.passes.autodiff.registry import gradient_rule


def _groups(op: Op) -> dict:
    return {"replica_groups": op.attrs["replica_groups"], "channel_id": op.attrs["channel_id"]}


def _sum_only(op: Op) -> None:
    if op.attrs["reduction"] != "sum":
        raise ValueError(f"gradient of {op.opcode} with reduction {op.attrs['reduction']} is "
                         "not supported (only sum; exclude such a value with stop_gradients)")


@gradient_rule(ops.all_reduce, multi_result=True)
def _all_reduce(ctx: GradContext, op: Op, cts: list[Value | None]) -> Sequence[Value | None]:
    _sum_only(op)
    return list(cts)


@gradient_rule(ops.optimization_barrier, multi_result=True)
def _barrier(ctx: GradContext, op: Op, cts: list[Value | None]) -> Sequence[Value | None]:
    return list(cts)


@gradient_rule(ops.tp_copy)
def _tp_copy(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.all_reduce(g, reduction="sum", **_groups(op))]


@gradient_rule(ops.all_gather)
def _all_gather(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    return [ctx.b.reduce_scatter(g, dimension=attr_of(op.attrs, "dimension", int), reduction="sum",
                                 **_groups(op))]


@gradient_rule(ops.reduce_scatter)
def _reduce_scatter(ctx: GradContext, op: Op, g: Value) -> Sequence[Value | None]:
    _sum_only(op)
    return [ctx.b.all_gather(g, dimension=attr_of(op.attrs, "dimension", int), **_groups(op))]
