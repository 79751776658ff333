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
  started collective is outstanding (every earlier job is then finished, so the order is
  kept), else it is queued behind them and waited for. The executor runs a start directly
  followed by its done as one such synchronous collective (nothing to overlap).

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
        self._started: dict[int, Future] = {}
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
        inner = self.inner
        opdef = get_opdef(opcode)
        start_of = STARTS.get(opdef)
        if start_of is not None:
            kind = start_of.name
            copies = [np.array(a, copy=True) for a in args]
            future = self._submit(self._timed(
                kind, lambda: inner.collective(kind, copies, attrs)))
            with self._lock:
                handle, self._next = self._next, (self._next + 1) % (1 << 32)
                self._started[handle] = future
            return [np.array(handle, np.uint32)]
        if opdef in DONES:
            with self._lock:
                future = self._started.pop(int(args[0]))
            return future.result()
        with self._lock:
            idle = not self._started
        if idle:  # nothing queued before it: run it here, without two thread switches
            return self._timed(opcode, lambda: inner.collective(opcode, args, attrs))()
        return self._submit(self._timed(
            opcode, lambda: inner.collective(opcode, args, attrs))).result()

    def reset(self) -> None:
        """Forget the starts of an execution that failed before their dones."""
        with self._lock:
            self._started.clear()


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
