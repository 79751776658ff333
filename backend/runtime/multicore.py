"""Running the programs of one model concurrently, one thread per physical core, exchanging
data only through collectives run by their bindings.

`Communicator(n, binder)` is the communicator of n ranks: `endpoint(rank)` is what rank's
executor calls. Each collective runs by its binding (`collective_binding`; `binder` defaults
to every rank in one logical core, i.e. shared memory):

- shared_memory / point_to_point: one barrier-delimited step: every rank publishes its
  operands in its slot, waits for all, computes its own result from its group's slots (in
  group order, so every rank computes the same bits; `shared_memory.compute`), and waits
  again before the slots are reused;
- ring: `binding.steps` such steps, in each of which a rank publishes one message and reads
  only its ring predecessor's (`ring_algorithms`); a rank whose ring is shorter than the
  longest (or that is in no group) passes, so every rank takes the same number of steps.

Replica groups partition the ranks; every rank takes part in every collective (the programs
are SPMD), each reading only its group's slots. `SharedMemoryGroup` is the same class (the
name it had when shared memory was its only algorithm).

Failures never hang: a rank that raises aborts the barrier, and so does a rank that finishes
its program while another still waits in a collective (the programs disagree); the others
then fail with an error naming the collective. `run_cores` re-raises the first real error
(an `ExecutionStopped` wins, so a timeout stays a timeout).

BLAS threads: numpy's matrix products run in OpenBLAS threads, and n cores each using every
CPU would oversubscribe the machine. Each core's thread limits its own OpenBLAS thread count
to max(1, cpus // n) with OpenBLAS's per-thread `openblas_set_num_threads_local`, found in
the already loaded library through ctypes (`blas_threads.py`), all inside one process-wide
`limit_process` region, so the count is back exactly where it was once every core is done
(numpy's OpenBLAS applies that "per-thread" count to the whole process); where that symbol
is missing nothing is changed (the environment variables OPENBLAS_NUM_THREADS / OMP_NUM_THREADS only
act before numpy is imported, so they cannot be set from here).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.async_comm import AsyncEndpoint
from nxcc.backend.runtime.barrier import Barrier
from nxcc.backend.runtime.blas_threads import limit_process, limit_this_thread
from nxcc.backend.runtime.channels import LocalChannels
from nxcc.backend.runtime.collective_binding import RING, Binder, CollectiveBinding, Placement
from nxcc.backend.runtime.core_threads import run_on_threads
from nxcc.backend.runtime.executor import ExecutionError, ExecutionStopped
from nxcc.backend.runtime.p2p import is_point_to_point, point_to_point
from nxcc.backend.runtime.ring_algorithms import run_ring
from nxcc.backend.runtime.shared_memory import compute, members
from nxcc.ir.attributes import AttrValue

#: How long an in-process receive waits for its sender (seconds): a program whose sender
#: never sends is an error, not a hang.
P2P_TIMEOUT = 60.0


class CollectiveMismatch(ExecutionError):
    """The ranks did not all reach the same collective."""


class Communicator:
    """The communicator of `n` ranks; collectives run as `binder` binds them."""

    def __init__(self, n: int, binder: Binder | None = None) -> None:
        self.n = n
        self.binder = binder or Binder(Placement.one_logical_core(n))
        self.slots: list[object] = [None] * n
        self.barrier = Barrier(n)
        self.calls = [0] * n
        # send/recv do not step together: queues, failing when the barrier breaks
        self.p2p = LocalChannels(P2P_TIMEOUT, lambda: self.barrier.broken)

    def endpoint(self, rank: int) -> AsyncEndpoint:
        return AsyncEndpoint(Endpoint(self, rank), f"nxcc-comm{rank}")

    def reset(self) -> None:
        """Ready for a new execution (after a failed one left the barrier broken)."""
        self.barrier.reset()
        self.slots = [None] * self.n
        self.calls = [0] * self.n
        self.p2p.reset()

    def wait(self, rank: int, opcode: str) -> None:
        if not self.barrier.wait():
            raise CollectiveMismatch(
                f"core {rank}: {opcode} (collective #{self.calls[rank]}) was abandoned: another "
                "core failed or finished without reaching it")


SharedMemoryGroup = Communicator


class Endpoint:
    """Rank `rank`'s side of a `Communicator`: the executor's `communicator`."""

    def __init__(self, group: Communicator, rank: int) -> None:
        self.group = group
        self.rank = rank

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        g = self.group
        if is_point_to_point(opcode):
            return point_to_point(g.p2p, self.rank, opcode, args, attrs)
        g.calls[self.rank] += 1
        try:
            binding = g.binder.binding(opcode, attrs, sum(int(a.nbytes) for a in args))
        except ValueError as exc:
            raise ExecutionError(f"{opcode}: {exc}") from None
        if binding.algorithm == RING:
            return self._ring(opcode, args, attrs, binding)
        g.slots[self.rank] = list(args)
        g.wait(self.rank, opcode)
        try:
            group = members(attrs, self.rank, g.n)
            result = compute(opcode, g.slots, group, self.rank, attrs)
        finally:
            g.wait(self.rank, opcode)
        return result

    def _ring(self, opcode: str, args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
              binding: CollectiveBinding) -> list[np.ndarray]:
        g, rank = self.group, self.rank
        route = next((r for r in binding.routes if rank in r.ranks), None)
        steps = 0
        # The operands are views of this rank's planned buffers, which it reuses as soon as it
        # leaves the collective, while a neighbour may still hold blocks it was handed: the
        # collective works on its own copy, so nothing a neighbour reads is ever overwritten.
        args = [np.array(a, copy=True) for a in args]

        def exchange(message: object) -> object:
            nonlocal steps
            steps += 1
            g.slots[rank] = message
            g.wait(rank, opcode)
            got = g.slots[pred] if route is not None else None
            g.wait(rank, opcode)
            return got

        if route is None:
            result = [np.array(a, copy=True) for a in args]
        else:
            ring = route.ranks
            pred = ring[(ring.index(rank) - 1) % len(ring)]
            group = members(attrs, rank, g.n)
            result = run_ring(opcode, args, attrs, group, ring, rank, exchange)
        while steps < binding.steps:
            exchange(None)
        return result


def run_cores(work: Sequence[Callable[[], list[np.ndarray]]],
              group: Communicator) -> list[list[np.ndarray]]:
    """Run `work[k]` (core k's program on its arguments) on one thread per core, core 0 on
    the calling thread; their results, or the first real error raised."""
    n = len(work)
    results: list[list[np.ndarray] | None] = [None] * n
    errors: list[BaseException | None] = [None] * n
    threads_per_core = _blas_share(n)

    def body(k: int) -> None:
        with limit_this_thread(threads_per_core):
            try:
                results[k] = work[k]()
                group.barrier.finish()  # whoever still waits in a collective never completes
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors[k] = exc
                group.barrier.abort()

    group.reset()
    with limit_process(threads_per_core):  # restored exactly once every core is done
        run_on_threads([functools.partial(body, k) for k in range(n)],
                       [f"nxcc-core{k}" for k in range(n)])
    real = [e for e in errors if e is not None and not isinstance(e, CollectiveMismatch)]
    stopped = [e for e in real if isinstance(e, ExecutionStopped)]
    first = (stopped or real or [e for e in errors if e is not None] or [None])[0]
    if first is not None:
        raise first
    return results  # type: ignore[return-value]


def _blas_share(n: int) -> int:
    return max(1, _cpus() // max(n, 1))


@functools.cache
def _cpus() -> int:
    import os

    return os.cpu_count() or 1


class CoreBlocks:
    """Which block of each input and output every core reads and writes (from the
    manifest's subgraph entries; a subgraph without blocks reads and writes whole tensors)."""

    def __init__(self, subgraphs: Sequence[dict], n_inputs: int, n_outputs: int) -> None:
        self.inputs = [_slices(sg.get("inputs"), n_inputs) for sg in subgraphs]
        self.outputs = [_slices(sg.get("outputs"), n_outputs) for sg in subgraphs]

    def args(self, core: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Core `core`'s arguments: its blocks (row-major copies when not already
        contiguous; whole inputs as given)."""
        out = []
        for x, where in zip(inputs, self.inputs[core], strict=True):
            out.append(x if where is None else np.require(x[where], requirements="C"))
        return out

    def assemble(self, per_core: Sequence[Sequence[np.ndarray]],
                 shapes: Sequence[tuple[int, ...]]) -> list[np.ndarray]:
        """The whole outputs from every core's blocks (a replicated output: core 0's)."""
        results = []
        for i, shape in enumerate(shapes):
            first = per_core[0][i]
            if self.outputs[0][i] is None or tuple(first.shape) == tuple(shape):
                results.append(first)
                continue
            whole = np.empty(shape, first.dtype)
            for core, arrays in enumerate(per_core):
                where = self.outputs[core][i]
                whole[where if where is not None else ...] = arrays[i]
            results.append(whole)
        return results


def _slices(entries: Sequence[dict] | None, count: int) -> list[tuple[slice, ...] | None]:
    if entries is None:
        return [None] * count
    return [tuple(slice(a, a + s) for a, s in zip(e["start"], e["shape"], strict=True))
            for e in entries]
