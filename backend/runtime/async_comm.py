"""Each rank's communication on its own thread, so a collective's start overlaps compute.

The Neuron hardware runs collectives on dedicated engines beside the compute engines; here
each rank gets one communication thread (`AsyncEndpoint`, wrapping the rank's endpoint of any
transport). Every collective and transfer of the rank runs on that thread, in program order
(so all ranks still meet their collectives in the same order):

- `<kind>_start` (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute)
  copies its operands, queues the collective and returns at once with a context (u32[])
  naming it; the compute thread goes on with what follows;
- `<kind>_done` waits for the collective its context names and gives its results;
- any other collective or transfer is synchronous: it runs on the calling thread when no
  started collective is outstanding on the thread (every earlier job is then finished, so
  the order is kept), else it is queued behind them and waited for. The executor runs a
  start directly followed by its done as one such synchronous collective (nothing to
  overlap).

An inner endpoint may start a collective itself (`post(opcode, args, attrs)`, returning a
callable that gives the results, or None): ranks that are threads of this process meet
their group there (`local_collectives`), so a start posts its operands at once and its done
computes the results on the calling thread, with no job for the communication thread. With
`collective_into` the results go straight into the caller's arrays where the inner
endpoint can write them there (`ir.kernels.collective.copy_results` otherwise).

A failure on the communication thread surfaces at the op that waits for it.
"""

from __future__ import annotations

import queue
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Protocol

import numpy as np

from nxcc.backend.runtime.profile import COMMUNICATION, Profiler
from nxcc.ir.attributes import AttrValue
from nxcc.ir.kernels.collective import copy_results
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.ops.collective import ASYNC_PAIRS

#: each start -> the collective it begins; the dones.
STARTS: dict[OpDef, OpDef] = {start: kind for kind, (start, _) in ASYNC_PAIRS.items()}
DONES: frozenset[OpDef] = frozenset(done for _, done in ASYNC_PAIRS.values())


class Endpoint(Protocol):
    rank: int

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]: ...


class AsyncEndpoint:
    """`inner`'s collectives, run on this rank's own communication thread."""

    def __init__(self, inner: Endpoint, name: str = "nxcc-comm") -> None:
        self.inner = inner
        self.rank = inner.rank
        self.name = name
        self.profiler: Profiler | None = None  # set by `profile.attach`
        self.track = COMMUNICATION  # the profile's track of this endpoint's events
        self.label = ""  # what the profile's event names start with (e.g. "tp ")
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._started: dict[int, Future | _Posted] = {}
        self._next = 0

    def _timed(self, name: str, work: Callable[[], list[np.ndarray]]
               ) -> Callable[[], list[np.ndarray]]:
        """`work`, recorded as a communication event of this rank when profiling."""
        profiler = self.profiler
        if profiler is None:
            return work

        def run() -> list[np.ndarray]:
            start = time.perf_counter()
            try:
                return work()
            finally:
                profiler.record(self.label + name, self.rank, self.track, start,
                                time.perf_counter())

        return run

    def _submit(self, work: Callable[[], list[np.ndarray]]) -> Future:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=_serve, args=(self._queue,),
                                                name=self.name, daemon=True)
                self._thread.start()
                # the thread ends when the endpoint (its model) is gone
                weakref.finalize(self, self._queue.put, None)
        future: Future = Future()
        self._queue.put((work, future))
        return future

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        return self._collective(opcode, args, attrs, None)

    def collective_into(self, opcode: str, args: Sequence[np.ndarray],
                        attrs: Mapping[str, AttrValue], outs: Sequence[np.ndarray]) -> None:
        """`collective`, its results written into `outs`."""
        self._collective(opcode, args, attrs, outs)

    def _collective(self, opcode: str, args: Sequence[np.ndarray],
                    attrs: Mapping[str, AttrValue], outs: Sequence[np.ndarray] | None
                    ) -> list[np.ndarray]:
        inner = self.inner
        opdef = get_opdef(opcode)
        start_of = STARTS.get(opdef)
        if start_of is not None:
            kind = start_of.name
            post = getattr(inner, "post", None)
            finish = post(kind, args, attrs) if post is not None else None
            started: Future | _Posted
            if finish is not None:
                started = _Posted(self, kind, finish)
            else:
                copies = [np.array(a, copy=True) for a in args]
                started = self._submit(self._timed(
                    kind, lambda: inner.collective(kind, copies, attrs)))
            with self._lock:
                handle, self._next = self._next, (self._next + 1) % (1 << 32)
                self._started[handle] = started
            return _given(opcode, outs, [np.array(handle, np.uint32)])
        if opdef in DONES:
            with self._lock:
                pending = self._started.pop(int(args[0]))
            if isinstance(pending, _Posted):
                return pending.result(outs)
            return _given(opcode, outs, pending.result())
        with self._lock:  # jobs of the thread started before it
            idle = not any(isinstance(s, Future) for s in self._started.values())
        into = getattr(inner, "collective_into", None)

        def work() -> list[np.ndarray]:
            if outs is not None and into is not None:
                into(opcode, args, attrs, outs)
                return list(outs)
            return _given(opcode, outs, inner.collective(opcode, args, attrs))

        if idle:  # nothing queued before it: run it here, without two thread switches
            return self._timed(opcode, work)()
        return self._submit(self._timed(opcode, work)).result()

    def reset(self) -> None:
        """Forget the starts of an execution that failed before their dones."""
        with self._lock:
            self._started.clear()


class _Posted:
    """A collective the inner endpoint started itself: `result(outs)` finishes it on the
    calling thread (once), recorded as a communication event when profiling."""

    def __init__(self, endpoint: AsyncEndpoint, kind: str,
                 finish: Callable[[Sequence[np.ndarray] | None], list[np.ndarray]]) -> None:
        self.endpoint, self.kind, self.finish = endpoint, kind, finish

    def result(self, outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
        return self.endpoint._timed(self.kind, lambda: self.finish(outs))()


def _given(opcode: str, outs: Sequence[np.ndarray] | None, results: list[np.ndarray]
           ) -> list[np.ndarray]:
    """`results`, copied into `outs` when given."""
    if outs is None:
        return results
    copy_results(opcode, outs, results)
    return list(outs)


def _serve(jobs: queue.SimpleQueue) -> None:
    """The communication thread: run each queued job, hand its outcome to its future; stop
    at None."""
    while True:
        job = jobs.get()
        if job is None:
            return
        work, future = job
        try:
            future.set_result(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting op
            future.set_exception(exc)
