"""A rank's communication groups (TP, DP, the whole job) over the job's channels.

A stage program's collectives name group-local ranks (`replica_groups=[[0..TP-1]]`); the
engine runs them inside the rank's TP group. `GroupChannels` renames a group's local ranks
0..k-1 to their global ranks on the job's channels and moves the group's traffic to streams
of its own (`base + stream`), so the TP group's collectives, the DP group's gradient buckets,
the job-wide reductions and the pipeline transfers never mix, even between the same two
ranks. `Group` is one rank's side of such a group:

- `endpoint`: for a program's collectives (`ChannelCommunicator`: the runtime's ring
  algorithms, each on the group's own communication thread);
- `all_reduce` / `reduce_scatter` / `all_gather` of flat arrays, synchronous or started on
  the group's communication thread (`start(...)` -> Future), in the order they are started.

Every reduction runs the runtime's fixed ring order, so all members get the same bits and a
run is reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from nxcc.backend.runtime.async_comm import AsyncEndpoint
from nxcc.backend.runtime.channel_comm import ChannelCommunicator, Channels
from nxcc.backend.runtime.collective_binding import Binder, Placement
from nxcc.backend.runtime.topology import INSTANCES
from nxcc.ir.attributes import AttrValue

#: Stream bases: each kind of traffic on streams of its own.
TP_STREAMS, DP_STREAMS, WORLD_STREAMS, PIPE_STREAMS, EMBED_STREAMS = 10, 20, 30, 40, 50
#: An instance big enough to place a group's ranks on distinct cores (ring algorithms).
RING_INSTANCE = INSTANCES["trn1.32xlarge"]


class GroupChannels:
    """`channels` seen by the members of one group, numbered 0..k-1 (see the docstring)."""

    def __init__(self, channels: Channels, members: Sequence[int], base: int) -> None:
        self.channels = channels
        self.members = list(members)
        self.base = base

    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None:
        self.channels.send(self.members[src], self.members[dst], message, self.base + stream)

    def recv(self, src: int, dst: int, stream: int = 0) -> object:
        return self.channels.recv(self.members[src], self.members[dst], self.base + stream)

    def abort(self) -> None:
        self.channels.abort()

    def reset(self) -> None:
        """The job's channels are reset by the job, not by one group."""

    def finish(self) -> None:
        """Nothing to release per group."""


def _placement(k: int) -> Placement:
    instance = RING_INSTANCE if k <= RING_INSTANCE.physical_cores else None
    return Placement(instance, 1, tuple(range(k)))


class Group:
    """Rank `members[index]`'s side of the group `members` (see the module docstring)."""

    def __init__(self, channels: Channels, members: Sequence[int], rank: int, base: int,
                 name: str) -> None:
        self.members = list(members)
        self.size = len(self.members)
        self.index = self.members.index(rank)
        self.comm = ChannelCommunicator(self.size, Binder(_placement(self.size)),
                                        GroupChannels(channels, self.members, base))
        self.endpoint: AsyncEndpoint = self.comm.endpoint(self.index)
        self._sync = self.endpoint.inner
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"nxcc-{name}{rank}")

    def _collective(self, opcode: str, x: np.ndarray, **attrs: AttrValue) -> np.ndarray:
        if self.size == 1:
            return np.array(x, copy=True)
        groups = (tuple(range(self.size)),)
        return self._sync.collective(opcode, [x], {"replica_groups": groups, **attrs})[0]

    def all_reduce(self, x: np.ndarray) -> np.ndarray:
        """The elementwise sum over the members (the same bits on each)."""
        return self._collective("all_reduce", x, reduction="sum")

    def reduce_scatter(self, x: np.ndarray) -> np.ndarray:
        """Block `index` (of `size` equal blocks of flat `x`) of the sum over the members."""
        return self._collective("reduce_scatter", x, reduction="sum", dimension=0)

    def all_gather(self, x: np.ndarray) -> np.ndarray:
        """The members' flat blocks concatenated in member order."""
        return self._collective("all_gather", x, dimension=0)

    def start(self, opcode: str, x: np.ndarray) -> Future:
        """`opcode` (all_reduce, reduce_scatter, all_gather) of a copy of `x`, run on the
        group's communication thread after those started before it."""
        mine = np.array(x, copy=True)
        return self._thread.submit(getattr(self, opcode), mine)

    def close(self) -> None:
        self._thread.shutdown(wait=False, cancel_futures=True)
