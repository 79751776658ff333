"""Point-to-point channels between ranks: in one process (queues) or across processes (MPI).

A rank sends a message to one other rank and receives one from one other rank; messages
between one pair of ranks on one stream arrive in the order they were sent (stream 0 carries
the collectives, stream 1 + c the point-to-point transfers of channel c). `send` never
blocks; `recv` waits for the next message from `src` to `dst` until the deadline, then
raises `RankLost` naming the rank that sent nothing (a rank that died, exited early or
hangs), so a job never hangs on a lost peer. `abort()` makes every waiting and later `recv`
of this process fail at once (a local rank failed; see `multicore.run_cores`).

- `LocalChannels`: every rank in this process (threads); a queue per (stream, src, dst).
  `meeting_point(members, stream)` is where a group of its ranks meet for their collectives
  (`MeetingPoint`): each member posts its operands and reads the others' where they lie,
  instead of passing blocks round a ring of queues.
- `MpiChannels`: ranks spread over the processes of an MPI job in blocks (process p holds
  ranks p*L .. p*L+L-1). Pairs within this process use queues; other pairs MPI's
  non-blocking send and a matched probe-and-receive of pickled messages (mpi4py), tagged by
  the pair, so the per-pair order is MPI's non-overtaking order. A message is serialised when
  sent: the sender may reuse its buffers at once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from nxcc.backend.runtime.executor import ExecutionError
from nxcc.backend.runtime.peer_liveness import PeerProcesses

#: How often a waiting receive looks again (seconds), at most.
POLL = 0.002


class RankLost(ExecutionError):
    """A peer rank sent nothing before the deadline (it died, exited early or hangs)."""


class ChannelsAborted(ExecutionError):
    """This process's job was aborted (a local rank failed) while a rank was waiting."""


class LocalChannels:
    """Channels between the ranks of this process (see the module docstring)."""

    def __init__(self, timeout: float, also_aborted: Callable[[], bool] = lambda: False
                 ) -> None:
        """`also_aborted()` true makes waiting receives fail too (the barrier of the
        in-process communicator was broken)."""
        self.timeout = timeout
        self.also_aborted = also_aborted
        self._queues: dict[tuple[int, int, int], queue.SimpleQueue] = {}
        self._meetings: dict[tuple[int, tuple[int, ...]], MeetingPoint] = {}
        self._lock = threading.Lock()
        self._aborted = threading.Event()

    def _queue(self, src: int, dst: int, stream: int) -> queue.SimpleQueue:
        with self._lock:
            q = self._queues.get((stream, src, dst))
            if q is None:
                q = self._queues[(stream, src, dst)] = queue.SimpleQueue()
            return q

    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None:
        self._queue(src, dst, stream).put(message)

    def recv(self, src: int, dst: int, stream: int = 0) -> object:
        q = self._queue(src, dst, stream)
        deadline = time.monotonic() + self.timeout
        while True:
            if self._aborted.is_set() or self.also_aborted():
                raise ChannelsAborted(f"rank {dst}: the job was aborted while it waited for "
                                      f"rank {src}")
            try:
                return q.get(timeout=min(0.05, max(deadline - time.monotonic(), 0.0)))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise RankLost(f"rank {src} was lost: rank {dst} received nothing from "
                                   f"it in {self.timeout:g} s") from None

    def meeting_point(self, members: Sequence[int], stream: int = 0) -> MeetingPoint | None:
        """The meeting point of the group `members` (ranks of this process) on `stream`,
        the same object for every member; None when a member runs elsewhere."""
        key = (stream, tuple(members))
        with self._lock:
            point = self._meetings.get(key)
            if point is None:
                point = self._meetings[key] = MeetingPoint(
                    key[1], self.timeout, lambda: self._aborted.is_set() or self.also_aborted())
            return point

    def abort(self) -> None:
        self._aborted.set()

    def reset(self) -> None:
        """Ready for a new execution: no abort, no stale message, no half-met collective."""
        self._aborted.clear()
        with self._lock:
            self._queues.clear()
            self._meetings.clear()

    def finish(self) -> None:
        """Called when a local rank completed its program (nothing to release here)."""


class MeetingPoint:
    """Where the `size` members of one group, threads of this process, meet for their
    collectives; a member is named by its position in the group (0..size-1), the ranks it
    stands for are `ranks`. Member m's n-th `post` meets the others' n-th. A member posts its
    operands (arrays it leaves unchanged until every member has left the call), `collect`
    waits for every member's and gives them all, by position, and `leave` says it has read
    them (waiting, if asked, until every member has); the call is forgotten once all have
    left (`over`). A wait ends in `ChannelsAborted` when the job is aborted and in
    `RankLost`, naming the ranks it waited for, after `timeout` seconds."""

    def __init__(self, ranks: Sequence[int], timeout: float,
                 aborted: Callable[[], bool]) -> None:
        self.ranks = tuple(ranks)
        self.size = len(self.ranks)
        self.timeout = timeout
        self.aborted = aborted
        self._cond = threading.Condition()
        self._posts = [0] * self.size
        self._calls: dict[int, tuple[dict[int, object], set[int]]] = {}
        """Call -> (each member's operands, the members that left it)."""

    def post(self, member: int, operands: object) -> int:
        """Post `member`'s operands of its next call; the call's number."""
        with self._cond:
            n = self._posts[member]
            self._posts[member] = n + 1
            posted, _ = self._calls.setdefault(n, ({}, set()))
            posted[member] = operands
            if len(posted) == self.size:
                self._cond.notify_all()
            return n

    def collect(self, member: int, n: int) -> dict[int, object]:
        """Every member's operands of call `n`, once all have posted them."""
        posted, _ = self._calls[n]
        self._wait(member, lambda: len(posted) == self.size,
                   lambda: [m for m in range(self.size) if m not in posted], "post")
        return posted

    def leave(self, member: int, n: int, wait: bool = False) -> None:
        """`member` has read call `n`'s operands; with `wait`, return once every member
        has (its own operands are then free)."""
        with self._cond:
            _, left = self._calls[n]
            left.add(member)
            if len(left) == self.size:
                del self._calls[n]
                self._cond.notify_all()
        if wait:
            self._wait(member, lambda: n not in self._calls,
                       lambda: [m for m in range(self.size) if m not in left], "finish")

    def over(self, n: int) -> bool:
        """Whether every member has left call `n` (a posted one)."""
        with self._cond:
            return n not in self._calls

    def _wait(self, member: int, done: Callable[[], bool],
              missing: Callable[[], list[int]], what: str) -> None:
        deadline = time.monotonic() + self.timeout
        with self._cond:
            while not done():
                if self.aborted():
                    raise ChannelsAborted(f"rank {self.ranks[member]}: the job was aborted "
                                          f"while it waited for its group's collective")
                left = deadline - time.monotonic()
                if left <= 0:
                    late = [str(self.ranks[m]) for m in missing()]
                    who = (f"rank {late[0]} was" if len(late) == 1 else
                           f"ranks {', '.join(late)} were")
                    raise RankLost(f"{who} lost: rank {self.ranks[member]} waited "
                                   f"{self.timeout:g} s for them to {what} a collective")
                self._cond.wait(min(0.05, left))


class MpiChannels(LocalChannels):
    """Channels between the ranks of an MPI job (see the module docstring)."""

    def __init__(self, comm: Any, world_size: int, local_ranks: Sequence[int],
                 timeout: float, peers: PeerProcesses | None = None) -> None:
        """`peers`: the job's processes, so that a receive names a peer whose process has
        ended at once, instead of waiting out the deadline."""
        super().__init__(timeout)
        self.peers = peers
        self.comm = comm
        self.world_size = world_size
        self.local = frozenset(local_ranks)
        self.per_process = len(local_ranks)
        self._mpi_lock = threading.Lock()
        self._pending: list[Any] = []

    def meeting_point(self, members: Sequence[int], stream: int = 0) -> MeetingPoint | None:
        if not self.local.issuperset(members):
            return None
        return super().meeting_point(members, stream)

    def process_of(self, rank: int) -> int:
        return rank // self.per_process

    def _tag(self, src: int, dst: int, stream: int) -> int:
        return (stream * self.world_size + src) * self.world_size + dst

    def send(self, src: int, dst: int, message: object, stream: int = 0) -> None:
        if dst in self.local:
            super().send(src, dst, message, stream)
            return
        with self._mpi_lock:
            self._pending.append(self.comm.isend(message, dest=self.process_of(dst),
                                                 tag=self._tag(src, dst, stream)))

    def recv(self, src: int, dst: int, stream: int = 0) -> object:
        if src in self.local:
            return super().recv(src, dst, stream)
        source, tag = self.process_of(src), self._tag(src, dst, stream)
        deadline = time.monotonic() + self.timeout
        wait = 0.0001
        while True:
            try:
                with self._mpi_lock:
                    found = self.comm.improbe(source=source, tag=tag)
                    if found is not None:
                        return found.recv()
            except Exception as exc:  # noqa: BLE001 - mpi4py's MPI.Exception, without importing it
                self._name_the_lost_peer()  # MPI's own words are long; say it as we do
                raise RankLost(f"rank {src} (process {source}) was lost: {exc}") from None
            if self._aborted.is_set():
                raise ChannelsAborted(f"rank {dst}: the job was aborted while it waited for "
                                      f"rank {src}")
            self._check_peers()
            if time.monotonic() >= deadline:
                raise RankLost(f"rank {src} (process {source}) was lost: rank {dst} received "
                               f"nothing from it in {self.timeout:g} s")
            time.sleep(wait)
            wait = min(wait * 2, POLL)

    def _name_the_lost_peer(self) -> None:
        """After MPI reported a failed transfer: wait up to a second for the peer's process to
        be seen ended (it may still be exiting), then raise RankLost naming it."""
        for _ in range(20):
            self._check_peers(now=True)
            time.sleep(0.05)

    def _check_peers(self, now: bool = False) -> None:
        lost = None if self.peers is None else self.peers.lost_message(now)
        if lost is not None:
            raise RankLost(lost)

    def complete_sends(self) -> None:
        """Wait until every message this process sent has left (before its buffers go);
        RankLost if a receiver's process ends or the deadline passes first."""
        with self._mpi_lock:
            pending, self._pending = self._pending, []
        deadline = time.monotonic() + self.timeout
        wait = 0.0001
        while pending:
            with self._mpi_lock:
                pending = [r for r in pending if not r.Test()]
            if not pending:
                return
            self._check_peers()
            if time.monotonic() >= deadline:
                raise RankLost(f"{len(pending)} message(s) of this process were not taken "
                               f"in {self.timeout:g} s")
            time.sleep(wait)
            wait = min(wait * 2, POLL)

    def reset(self) -> None:
        self.complete_sends()
        super().reset()
