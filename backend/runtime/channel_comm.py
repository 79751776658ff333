"""A communicator over point-to-point channels: the transport for ranks in several processes.

`ChannelCommunicator(n, binder, channels)` has the interface of `multicore.Communicator`
(`endpoint(rank)`, `reset()`, `barrier.finish()/abort()` for `run_cores`) and runs each
collective by the same binding and the same algorithm code as the in-process communicator,
so a job gives the same bits whether its ranks are threads of one process, processes of one
instance or processes on several instances:

- ring: `ring_algorithms.run_ring`, each step sending to the ring successor and receiving from
  the predecessor (no global step: ranks of other groups are not waited for);
- hierarchical (an all-reduce over several instances): reduce-scatter round the ring inside
  each instance, then the ranks holding the same chunk on every instance send it to each
  other and fold it in instance order, then all-gather round the ring inside each instance;
- shared_memory / point_to_point: every member of the rank's group sends it its operands and it
  computes its result from them in group order (`shared_memory.compute`); a
  collective-permute sends only to its target.

Operands are copied before they are sent, so a rank may reuse its buffers as soon as it leaves
a collective.

When every member of a rank's group is a thread of this process (the channels give the group
a meeting point), a ring or shared-memory collective other than a permute moves no message:
it is met at once (`local_collectives`), with the same bits. `collective_into` writes the
results into the caller's arrays, and `post` starts a collective whose results a `Finish`
computes later (at its done, on the caller's thread: no communication thread is involved).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np

from nxcc.backend.runtime.async_comm import AsyncEndpoint
from nxcc.backend.runtime.channels import MeetingPoint
from nxcc.backend.runtime.collective_binding import (
    HIERARCHICAL,
    RING,
    SHARED_MEMORY,
    Binder,
    CollectiveBinding,
)
from nxcc.backend.runtime.executor import ExecutionError
from nxcc.backend.runtime.local_collectives import Finish, LocalSide
from nxcc.backend.runtime.p2p import is_point_to_point, point_to_point
from nxcc.backend.runtime.ring_algorithms import (
    AT_ONCE,
    all_gather_steps,
    reduce_scatter_steps,
    run_ring,
)
from nxcc.backend.runtime.shared_memory import REDUCE, compute, members, reduce_all
from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints2, attr_of
from nxcc.ir.kernels.collective import copy_results
from nxcc.ir.opdef import OP_DEFS


class Channels(Protocol):
    """What `channels.LocalChannels` and `channels.MpiChannels` offer."""

    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None: ...
    def recv(self, src: int, dst: int, stream: int = 0) -> object: ...
    def abort(self) -> None: ...
    def reset(self) -> None: ...
    def finish(self) -> None: ...
    def meeting_point(self, members: Sequence[int], stream: int = 0
                      ) -> MeetingPoint | None: ...


class ChannelCommunicator:
    """The communicator of `n` ranks whose data moves over `channels`."""

    def __init__(self, n: int, binder: Binder, channels: Channels) -> None:
        self.n = n
        self.binder = binder
        self.channels = channels
        self.barrier = channels  # run_cores calls barrier.finish() / barrier.abort()

    def endpoint(self, rank: int) -> AsyncEndpoint:
        return AsyncEndpoint(ChannelEndpoint(self, rank), f"nxcc-comm{rank}")

    def reset(self) -> None:
        self.channels.reset()


class ChannelEndpoint:
    """Rank `rank`'s side of a `ChannelCommunicator`."""

    def __init__(self, comm: ChannelCommunicator, rank: int) -> None:
        self.comm = comm
        self.rank = rank
        self.local = LocalSide(rank, comm.n)

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        if is_point_to_point(opcode):
            return point_to_point(self.comm.channels, self.rank, opcode, args, attrs)
        binding = self._binding(opcode, args, attrs)
        point = self._meeting_point(opcode, attrs, binding)
        if point is not None:
            return self.local.run(point, opcode, args, attrs, binding)
        mine = [np.array(a, copy=True) for a in args]
        if binding.algorithm == RING:
            return self._ring(opcode, mine, attrs, binding)
        if binding.algorithm == HIERARCHICAL:
            return self._hierarchical(mine, attrs, binding)
        if OP_DEFS.get(opcode) is ops.collective_permute:
            return self._permute(mine, attrs)
        return self._gathered(opcode, mine, attrs)

    def collective_into(self, opcode: str, args: Sequence[np.ndarray],
                        attrs: Mapping[str, AttrValue], outs: Sequence[np.ndarray]) -> None:
        """`collective`, its results written into `outs` (at a meeting point, straight
        there where the algorithm can)."""
        if not is_point_to_point(opcode):
            binding = self._binding(opcode, args, attrs)
            point = self._meeting_point(opcode, attrs, binding)
            if point is not None:
                self.local.run(point, opcode, args, attrs, binding, outs)
                return
        copy_results(opcode, outs, self.collective(opcode, args, attrs))

    def post(self, opcode: str, args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue]
             ) -> Finish | None:
        """The collective `opcode` started, when its group meets in this process: copies
        of `args` posted now, the returned `Finish` computes the results. None, starting
        nothing, when it is not run that way (call `collective` then)."""
        if is_point_to_point(opcode):
            return None
        binding = self._binding(opcode, args, attrs)
        point = self._meeting_point(opcode, attrs, binding)
        if point is None:
            return None
        return self.local.start(point, opcode, args, attrs, binding)

    def _binding(self, opcode: str, args: Sequence[np.ndarray],
                 attrs: Mapping[str, AttrValue]) -> CollectiveBinding:
        try:
            return self.comm.binder.binding(opcode, attrs, sum(int(a.nbytes) for a in args))
        except ValueError as exc:
            raise ExecutionError(f"{opcode}: {exc}") from None

    def _meeting_point(self, opcode: str, attrs: Mapping[str, AttrValue],
                       binding: CollectiveBinding) -> MeetingPoint | None:
        """The meeting point of this rank's group for the collective, when its members are
        all threads of this process and the collective is computed at once there."""
        if binding.algorithm not in (RING, SHARED_MEMORY) or AT_ONCE.get(opcode) is None:
            return None
        if not any(self.rank in r.ranks for r in binding.routes):
            return None  # in no group (the ring leaves it alone)
        meeting_point = getattr(self.comm.channels, "meeting_point", None)
        if meeting_point is None:
            return None
        return meeting_point(members(attrs, self.rank, self.comm.n))

    def _ring(self, opcode: str, args: list[np.ndarray], attrs: Mapping[str, AttrValue],
              binding: CollectiveBinding) -> list[np.ndarray]:
        rank, ch = self.rank, self.comm.channels
        route = next((r for r in binding.routes if rank in r.ranks), None)
        if route is None:
            return args
        ring = route.ranks
        at = ring.index(rank)
        succ, pred = ring[(at + 1) % len(ring)], ring[(at - 1) % len(ring)]

        def exchange(message: object) -> object:
            ch.send(rank, succ, message)
            return ch.recv(pred, rank)

        return run_ring(opcode, args, attrs, members(attrs, rank, self.comm.n), ring, rank,
                        exchange)

    def _hierarchical(self, args: list[np.ndarray], attrs: Mapping[str, AttrValue],
                      binding: CollectiveBinding) -> list[np.ndarray]:
        rank, ch = self.rank, self.comm.channels
        placement = self.comm.binder.placement
        route = next(r for r in binding.routes if rank in r.ranks)
        inner_of: dict[int, list[int]] = {}
        for r in route.ranks:  # ring order, instance by instance
            inner_of.setdefault(placement.instance_of(r), []).append(r)
        inner = inner_of[placement.instance_of(rank)]
        k, p = len(inner), inner.index(rank)
        succ, pred = inner[(p + 1) % k], inner[(p - 1) % k]

        def exchange(message: object) -> object:
            ch.send(rank, succ, message)
            return ch.recv(pred, rank)

        fn = REDUCE[attr_of(attrs, "reduction", str)]
        flat = [np.array_split(x.reshape(-1), k) for x in args]
        chunks = list(range(k))
        mine = reduce_scatter_steps({c: [f[c] for f in flat] for c in chunks}, chunks, p,
                                    exchange, fn)
        peers = [inner_of[i][p] for i in sorted(inner_of)]
        for q in peers:
            if q != rank:
                ch.send(rank, q, mine)
        parts = [mine if q == rank else ch.recv(q, rank) for q in peers]
        total = [reduce_all(fn, [part[i] for part in parts]) for i in range(len(args))]  # type: ignore[index]
        have = all_gather_steps(total, chunks, p, exchange)
        return [np.concatenate([have[c][i] for c in chunks]).reshape(x.shape)  # type: ignore[index]
                for i, x in enumerate(args)]

    def _permute(self, args: list[np.ndarray], attrs: Mapping[str, AttrValue]
                 ) -> list[np.ndarray]:
        rank, ch = self.rank, self.comm.channels
        pairs = attr_ints2(attrs, "source_target_pairs")
        for src, dst in pairs:
            if src == rank:
                ch.send(rank, dst, args[0])
        for src, dst in pairs:
            if dst == rank:
                return [ch.recv(src, rank)]  # type: ignore[list-item]
        return [np.zeros_like(args[0])]

    def _gathered(self, opcode: str, args: list[np.ndarray], attrs: Mapping[str, AttrValue]
                  ) -> list[np.ndarray]:
        rank, ch = self.rank, self.comm.channels
        group = members(attrs, rank, self.comm.n)
        for m in group:
            if m != rank:
                ch.send(rank, m, args)
        slots: list[object] = [None] * self.comm.n
        slots[rank] = args
        for m in group:
            if m != rank:
                slots[m] = ch.recv(m, rank)
        return compute(opcode, slots, group, rank, attrs)
