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
run is reproducible. A group's collectives are bound to where its members run (`placement`:
their cores on the simulated instance, `job_cores.JobCores.placement`), as the runtime binds
a NEFF's: rings over the instance's links, hierarchical across instances. At LNC 2 a rank's
stage programs run on two physical cores, and physical core k of every member of a TP group
runs the group's collectives together: a group per core (`core` > 0 on streams of its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from nxcc.backend.runtime.async_comm import AsyncEndpoint
from nxcc.backend.runtime.channel_comm import ChannelCommunicator, ChannelEndpoint, Channels
from nxcc.backend.runtime.channels import MeetingPoint
from nxcc.backend.runtime.collective_binding import Binder, Placement
from nxcc.backend.runtime.profile import Profiler
from nxcc.backend.runtime.topology import INSTANCES
from nxcc.ir.attributes import AttrValue

#: Stream bases: each kind of traffic on streams of its own.
TP_STREAMS, DP_STREAMS, WORLD_STREAMS, PIPE_STREAMS, EMBED_STREAMS = 10, 20, 30, 40, 50
#: + k: the TP group of physical core k > 0 of the members' logical cores.
TP_CORE_STREAMS = 60
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

    def meeting_point(self, members: Sequence[int], stream: int = 0) -> MeetingPoint | None:
        return self.channels.meeting_point([self.members[m] for m in members],
                                           self.base + stream)

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
    """Rank `members[index]`'s side of the group `members` (see the module docstring);
    `placement` says where the members run (default: consecutive cores of a trn1.32xlarge)."""

    def __init__(self, channels: Channels, members: Sequence[int], rank: int, base: int,
                 name: str, placement: Placement | None = None) -> None:
        self.members = list(members)
        self.size = len(self.members)
        self.index = self.members.index(rank)
        self.placement = placement or _placement(self.size)
        self.comm = ChannelCommunicator(self.size, Binder(self.placement),
                                        GroupChannels(channels, self.members, base))
        self.endpoint: AsyncEndpoint = self.comm.endpoint(self.index)
        inner = self.endpoint.inner
        assert isinstance(inner, ChannelEndpoint)  # what ChannelCommunicator.endpoint wraps
        self._sync = inner
        self._thread = ThreadPoolExecutor(1, thread_name_prefix=f"nxcc-{name}{rank}")
        self.name, self.rank = name, rank
        self.profiler: Profiler | None = None
        self.track = 0

    def profile(self, profiler: Profiler, track: int) -> None:
        """Record the group's collectives (its own and those of the programs run on its
        endpoint) as `profiler` events of this rank on `track`."""
        self.profiler, self.track = profiler, track
        self.endpoint.profiler, self.endpoint.track = profiler, track
        self.endpoint.rank, self.endpoint.label = self.rank, f"{self.name} "

    def _collective(self, opcode: str, x: np.ndarray, **attrs: AttrValue) -> np.ndarray:
        if self.size == 1:
            return np.array(x, copy=True)
        groups = (tuple(range(self.size)),)
        call = {"replica_groups": groups, **attrs}
        if self.profiler is None:
            return self._sync.collective(opcode, [x], call)[0]
        with self.profiler.span(f"{self.name} {opcode}", self.rank, self.track,
                                {"bytes": int(x.nbytes), "ranks": self.members}):
            return self._sync.collective(opcode, [x], call)[0]

    def all_reduce(self, x: np.ndarray) -> np.ndarray:
        """The elementwise sum over the members (the same bits on each)."""
        return self._collective("all_reduce", x, reduction="sum")

    def all_reduce_in_place(self, arrays: Sequence[np.ndarray]) -> None:
        """Each of `arrays` replaced by its elementwise sum over the members, all in one
        collective (the same bits as an `all_reduce` of each: the ring cuts every operand
        on its own)."""
        if self.size == 1 or not arrays:
            return
        call: dict[str, AttrValue] = {"replica_groups": (tuple(range(self.size)),),
                                      "reduction": "sum"}
        if self.profiler is None:
            self._sync.collective_into("all_reduce", arrays, call, arrays)
            return
        with self.profiler.span(f"{self.name} all_reduce", self.rank, self.track,
                                {"bytes": sum(int(x.nbytes) for x in arrays),
                                 "ranks": self.members}):
            self._sync.collective_into("all_reduce", arrays, call, arrays)

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
