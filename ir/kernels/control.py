"""Control-flow kernels: call, while, conditional, partition_id, replica_id.

Functions run through `ctx.call`; their results are copied into the outs. partition_id and
replica_id read the context's ``partition_id`` / ``replica_id`` attributes (0 if absent).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Symbol, attr_of
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import store
from nxcc.ir.kernels.plan import kernel_only


def _copy_results(outs: Sequence[np.ndarray], results: Sequence[np.ndarray]) -> None:
    for out, r in zip(outs, results, strict=True):
        np.copyto(out, r)


@kernel(ops.call)
def call(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs = @callee(args)."""
    callee = attr_of(attrs, "callee", Symbol)
    _copy_results(outs, ctx.call(callee.name, list(args)))


@kernel(ops.while_)
def while_(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
           attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """state = args; while @condition(state): state = @body(state); outs = state."""
    cond = attr_of(attrs, "condition", Symbol)
    body = attr_of(attrs, "body", Symbol)
    state = list(args)
    while bool(np.asarray(ctx.call(cond.name, state)[0])):
        state = list(ctx.call(body.name, state))
    _copy_results(outs, state)


@kernel(ops.conditional)
def conditional(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Run one branch on args[1:]: pred true -> branches[0], false -> branches[1]; an s32
    index selects that branch, out of range the last."""
    branches: tuple[Symbol, ...] = attrs["branches"]  # type: ignore[assignment]
    selector = np.asarray(args[0])
    if selector.dtype == np.bool_:
        chosen = 0 if bool(selector) else 1
    else:
        index = int(selector)
        chosen = index if 0 <= index < len(branches) else len(branches) - 1
    _copy_results(outs, ctx.call(branches[chosen].name, list(args[1:])))


@kernel(ops.partition_id)
def partition_id(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                 attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = this core's partition index (u32)."""
    store(outs[0], int(getattr(ctx, "partition_id", 0)))


@kernel(ops.replica_id)
def replica_id(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
               attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = this replica's index (u32)."""
    store(outs[0], int(getattr(ctx, "replica_id", 0)))


@kernel(ops.optimization_barrier)
def optimization_barrier(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
                         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs = args."""
    _copy_results(outs, args)


kernel_only(ops.call, ops.conditional, ops.optimization_barrier, ops.partition_id,
            ops.replica_id, ops.while_)
