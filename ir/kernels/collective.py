"""Collective and point-to-point kernels: every one is performed by the context's communicator
(`ctx.collective(opcode, args, attrs)`); the kernel copies its results into the outs, or the
context writes them there itself when it offers `collective_into(opcode, args, attrs, outs)`
(the executor does)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.plan import kernel_only
from nxcc.ir.ops.collective import ASYNC_OPS

COLLECTIVES = (ops.all_reduce, ops.all_gather, ops.reduce_scatter, ops.all_to_all,
               ops.collective_permute, ops.send, ops.send_done, ops.recv, ops.recv_done,
               *ASYNC_OPS)


def collective_into(ctx: KernelContext, opcode: str, args: Sequence[np.ndarray],
                    attrs: Mapping[str, AttrValue], outs: Sequence[np.ndarray]) -> None:
    """outs = the collective `opcode` of `args`: written there by the context itself when
    it offers `collective_into(opcode, args, attrs, outs)`, else copied from
    `ctx.collective`'s results."""
    into = getattr(ctx, "collective_into", None)
    if into is not None:
        into(opcode, list(args), attrs, outs)
    else:
        copy_results(opcode, outs, ctx.collective(opcode, list(args), attrs))


def copy_results(opcode: str, outs: Sequence[np.ndarray], results: Sequence[np.ndarray]
                 ) -> None:
    """Write a collective's `results` into `outs` (ValueError when they do not pair up)."""
    if len(results) != len(outs):
        raise ValueError(f"{opcode}: the communicator returned {len(results)} results "
                         f"for {len(outs)} outs")
    for out, r in zip(outs, results, strict=True):
        if r is not out:
            np.copyto(out, r)


def _collective_kernel(opcode: str):
    def run(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
        """outs = ctx.collective(opcode, args, attrs) (`collective_into`)."""
        collective_into(ctx, opcode, args, attrs, outs)

    return run


for _op in COLLECTIVES:
    kernel(_op)(_collective_kernel(_op.name))


@kernel(ops.tp_copy)
def tp_copy(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """outs[0] = args[0]: the forward of tp_copy moves nothing (its gradient does)."""
    np.copyto(outs[0], args[0])


kernel_only(*COLLECTIVES, ops.tp_copy)
