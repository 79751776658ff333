"""Collectives of a group whose members are all threads of this process, met at once.

When every member of a rank's group runs in this process, the channels give the group a
meeting point (`channels.MeetingPoint`): a collective then moves no message round a ring.
Each member posts its operands there, takes every member's once all are posted, and
computes its own results from them in the order the bound algorithm folds them
(`ring_algorithms.ring_result` for a ring, `shared_memory.compute` for shared memory), so
the bits are the steps' bits. No thread but the caller's is involved.

`LocalSide` is one rank's side of its groups' meeting points:

- `run` (a synchronous collective): the operands are posted as they are (no copy) and the
  rank leaves once every member has read them; its results go into `outs` when given (no
  fresh array: large fresh arrays cost page faults and, in a process of several threads,
  the unmapping's TLB shootdowns), else into fresh arrays;
- `start` (a collective's start): the operands are copied into buffers of the rank's, kept
  until every member has read them and then reused by later starts, and posted; the
  returned `Finish` computes the results (at the done), waiting for the others' operands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.channels import MeetingPoint
from nxcc.backend.runtime.collective_binding import SHARED_MEMORY, CollectiveBinding
from nxcc.backend.runtime.ring_algorithms import ring_result
from nxcc.backend.runtime.shared_memory import compute, members
from nxcc.ir.attributes import AttrValue

#: copies of started collectives' operands a rank keeps for reuse, at most
KEPT_COPIES = 16


class LocalSide:
    """Rank `rank`'s side (of a communicator of `n` ranks) of its groups' meeting points."""

    def __init__(self, rank: int, n: int) -> None:
        self.rank = rank
        self.n = n
        self._copies: list[tuple[np.ndarray, MeetingPoint, int]] = []
        """Copies posted at starts, with the call that reads them."""

    def run(self, point: MeetingPoint, opcode: str, args: Sequence[np.ndarray],
            attrs: Mapping[str, AttrValue], binding: CollectiveBinding,
            outs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        """The collective, `args` read where they lie: the results (written into `outs`
        when given) once every member has read them."""
        call = point.post(self._position(attrs), list(args))
        if outs is not None and any(np.may_share_memory(o, a) for o in outs for a in args):
            results = self._results(point, call, opcode, attrs, binding, None)
            point.leave(self._position(attrs), call, wait=True)  # others read args till then
            for out, r in zip(outs, results, strict=True):
                np.copyto(out, r)
            return list(outs)
        results = self._results(point, call, opcode, attrs, binding, outs)
        point.leave(self._position(attrs), call, wait=True)
        return results

    def start(self, point: MeetingPoint, opcode: str, args: Sequence[np.ndarray],
              attrs: Mapping[str, AttrValue], binding: CollectiveBinding) -> Finish:
        """Post copies of `args` (the caller may overwrite them at once); what computes the
        results later."""
        copies = [self._copy(a) for a in args]
        call = point.post(self._position(attrs), copies)
        self._copies.extend((x, point, call) for x in copies)
        del self._copies[:-KEPT_COPIES]
        return Finish(self, point, call, opcode, attrs, binding)

    def _position(self, attrs: Mapping[str, AttrValue]) -> int:
        """This rank's position in its group (its name at the group's meeting point)."""
        return members(attrs, self.rank, self.n).index(self.rank)

    def _copy(self, a: np.ndarray) -> np.ndarray:
        """`a` copied into a kept buffer every member has finished reading, else a new one."""
        for i, (buffer, point, call) in enumerate(self._copies):
            if buffer.shape == a.shape and buffer.dtype == a.dtype and point.over(call):
                del self._copies[i]
                np.copyto(buffer, a)
                return buffer
        return np.array(a, order="C", copy=True)

    def _results(self, point: MeetingPoint, call: int, opcode: str,
                 attrs: Mapping[str, AttrValue], binding: CollectiveBinding,
                 outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        group = members(attrs, self.rank, self.n)
        posted = point.collect(group.index(self.rank), call)
        operands = {group[m]: a for m, a in posted.items()}
        if binding.algorithm == SHARED_MEMORY:
            slots = [operands.get(r) for r in range(self.n)]
            results = compute(opcode, slots, group, self.rank, attrs)
        else:
            ring = next(r for r in binding.routes if self.rank in r.ranks).ranks
            results = ring_result(opcode, operands, attrs, group, ring, self.rank,  # type: ignore[arg-type]
                                  outs)
        if outs is None:
            return results
        for out, r in zip(outs, results, strict=True):
            if r is not out:
                np.copyto(out, r)
        return list(outs)


class Finish:
    """The second half of a started collective: `finish(outs)` its results (written into
    `outs` when given), once every member's operands are posted."""

    def __init__(self, side: LocalSide, point: MeetingPoint, call: int, opcode: str,
                 attrs: Mapping[str, AttrValue], binding: CollectiveBinding) -> None:
        self.side, self.point, self.call = side, point, call
        self.opcode, self.attrs, self.binding = opcode, attrs, binding

    def __call__(self, outs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
        results = self.side._results(self.point, self.call, self.opcode, self.attrs,
                                     self.binding, outs)
        self.point.leave(self.side._position(self.attrs), self.call, wait=False)
        return results
