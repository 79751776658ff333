"""Point-to-point transfers (send, recv and their done halves) over a rank's channels.

Every rank runs every op (the programs are SPMD). `send` sends the operand from each pair's
source to its target on the channel's own stream (so transfers never mix with collectives or
with other channels), without waiting; `recv_done` waits for the value on each pair's target
and is zeros elsewhere; `send_done` and `recv` have nothing left to do. A lost source ends the
wait with the channels' error naming it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints, attr_ints2, attr_of
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import OP_DEFS

P2P_OPS = frozenset({ops.send, ops.send_done, ops.recv, ops.recv_done})


def is_point_to_point(opcode: str) -> bool:
    """Whether the op named `opcode` is a transfer (one of `P2P_OPS`)."""
    return OP_DEFS.get(opcode) in P2P_OPS


class PairChannels(Protocol):
    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None: ...
    def recv(self, src: int, dst: int, stream: int = 0) -> object: ...


def point_to_point(channels: PairChannels, rank: int, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    """Rank `rank`'s side of the transfer named `opcode` (one of `P2P_OPS`); its results."""
    op = OP_DEFS[opcode]
    context = np.zeros((), np.uint32)
    if op in (ops.send_done, ops.recv):
        return [context]
    stream = 1 + int(attrs.get("channel_id", 0) or 0)  # type: ignore[arg-type]
    pairs = attr_ints2(attrs, "source_target_pairs")
    if op is ops.send:
        for src, dst in pairs:
            if src == rank:
                channels.send(rank, dst, np.array(args[0], copy=True), stream)
        return [context]
    for src, dst in pairs:
        if dst == rank:
            return [channels.recv(src, rank, stream)]  # type: ignore[list-item]
    dtype = attr_of(attrs, "dtype", DType)
    assert isinstance(dtype, DType)
    return [np.zeros(tuple(attr_ints(attrs, "shape")), dtype.numpy)]
