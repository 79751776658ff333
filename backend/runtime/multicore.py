"""Running the per-core programs of one model concurrently, one thread per physical core,
exchanging data only through collectives over shared memory.

`SharedMemoryGroup(n)` is the communicator of the n physical cores of a logical core (they
share an address space): `endpoint(rank)` is what rank's executor calls. A collective is a
barrier-delimited exchange: every rank publishes its operands in its slot, waits for all,
computes its own result from its group's slots (in rank order, so every rank computes the
same bits), and waits again before the slots are reused. Replica groups partition the
ranks; every rank takes part in every collective (the programs are SPMD), each reading only
its group's slots.

Failures never hang: a rank that raises aborts the barrier, and so does a rank that finishes
its program while another still waits in a collective (the programs disagree); the others
then fail with an error naming the collective. `run_cores` re-raises the first real error
(an `ExecutionStopped` wins, so a timeout stays a timeout).

BLAS threads: numpy's matrix products run in OpenBLAS threads, and n cores each using every
CPU would oversubscribe the machine. Each core's thread limits its own OpenBLAS thread count
to max(1, cpus // n) with OpenBLAS's per-thread `openblas_set_num_threads_local`, found in
the already loaded library through ctypes (`blas_threads.py`); where that symbol is missing
nothing is changed (the environment variables OPENBLAS_NUM_THREADS / OMP_NUM_THREADS only
act before numpy is imported, so they cannot be set from here).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from backend.runtime.blas_threads import limit_this_thread
from backend.runtime.executor import ExecutionError, ExecutionStopped
from ir.attributes import AttrValue

_REDUCE = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "and": np.logical_and, "or": np.logical_or,
}


class CollectiveMismatch(ExecutionError):
    """The ranks did not all reach the same collective."""


class _Barrier:
    """A reusable barrier for `n` ranks that fails instead of hanging.

    A rank released by a completed generation always returns normally; `abort()` (a rank
    failed) and `finish()` (a rank completed its program) make every present and future
    waiter of an incomplete generation raise, since that generation can never complete.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.cond = threading.Condition()
        self.count = 0
        self.generation = 0
        self.broken = False
        self.finished = 0

    def reset(self) -> None:
        with self.cond:
            self.count = 0
            self.generation += 1
            self.broken = False
            self.finished = 0

    def wait(self) -> bool:
        """True once all n ranks arrived; False if the barrier can no longer complete."""
        with self.cond:
            if self.broken or self.finished:
                return False
            generation = self.generation
            self.count += 1
            if self.count == self.n:
                self.count = 0
                self.generation += 1
                self.cond.notify_all()
                return True
            while generation == self.generation and not (self.broken or self.finished):
                self.cond.wait()
            if generation != self.generation:
                return True
            self.count -= 1
            return False

    def abort(self) -> None:
        with self.cond:
            self.broken = True
            self.cond.notify_all()

    def finish(self) -> None:
        with self.cond:
            self.finished += 1
            self.cond.notify_all()


class SharedMemoryGroup:
    """The shared-memory communicator of `n` ranks (the physical cores of a logical core)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.slots: list[Sequence[np.ndarray] | None] = [None] * n
        self.barrier = _Barrier(n)
        self.calls = [0] * n

    def endpoint(self, rank: int) -> Endpoint:
        return Endpoint(self, rank)

    def reset(self) -> None:
        """Ready for a new execution (after a failed one left the barrier broken)."""
        self.barrier.reset()
        self.slots = [None] * self.n
        self.calls = [0] * self.n

    def wait(self, rank: int, opcode: str) -> None:
        if not self.barrier.wait():
            raise CollectiveMismatch(
                f"core {rank}: {opcode} (collective #{self.calls[rank]}) was abandoned: another "
                "core failed or finished without reaching it")


class Endpoint:
    """Rank `rank`'s side of a `SharedMemoryGroup`: the executor's `communicator`."""

    def __init__(self, group: SharedMemoryGroup, rank: int) -> None:
        self.group = group
        self.rank = rank

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        g = self.group
        g.calls[self.rank] += 1
        g.slots[self.rank] = list(args)
        g.wait(self.rank, opcode)
        try:
            members = _members(attrs, self.rank, g.n)
            inputs = [g.slots[m] for m in members]
            result = _compute(opcode, inputs, members.index(self.rank), self.rank, attrs, g)
        finally:
            g.wait(self.rank, opcode)
        return result


def _members(attrs: Mapping[str, AttrValue], rank: int, n: int) -> list[int]:
    groups = attrs.get("replica_groups") or ()
    for group in groups:  # type: ignore[union-attr]
        if rank in group:
            return list(group)
    return list(range(n))


def _compute(opcode: str, inputs: list, pos: int, rank: int,
             attrs: Mapping[str, AttrValue], group: SharedMemoryGroup) -> list[np.ndarray]:
    """Rank's result of `opcode` given every member's operands (`inputs[member]`)."""
    size = len(inputs)
    if opcode == "all_reduce":
        fn = _REDUCE[attrs["reduction"]]  # type: ignore[index]
        return [_reduce(fn, [x[i] for x in inputs]) for i in range(len(inputs[0]))]
    if opcode == "all_gather":
        return [np.concatenate([x[0] for x in inputs], axis=attrs["dimension"])]  # type: ignore[arg-type]
    if opcode == "reduce_scatter":
        full = _reduce(_REDUCE[attrs["reduction"]], [x[0] for x in inputs])  # type: ignore[index]
        return [np.split(full, size, axis=attrs["dimension"])[pos].copy()]  # type: ignore[call-overload]
    if opcode == "all_to_all":
        split, concat = attrs["split_dimension"], attrs["concat_dimension"]
        parts = [np.split(x[0], size, axis=split)[pos] for x in inputs]  # type: ignore[call-overload]
        return [np.concatenate(parts, axis=concat)]  # type: ignore[arg-type]
    if opcode == "collective_permute":
        mine = group.slots[rank][0]  # type: ignore[index]
        for src, dst in attrs["source_target_pairs"]:  # type: ignore[union-attr]
            if dst == rank:
                return [np.array(group.slots[src][0], copy=True)]  # type: ignore[index]
        return [np.zeros_like(mine)]
    raise ExecutionError(f"{opcode} is not a collective this communicator performs")


def _reduce(fn, arrays: list[np.ndarray]) -> np.ndarray:
    dtype = arrays[0].dtype
    out = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        out = fn(out, a)
    return np.asarray(out).astype(dtype, copy=False)


def run_cores(work: Sequence[Callable[[], list[np.ndarray]]],
              group: SharedMemoryGroup) -> list[list[np.ndarray]]:
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
    threads = [threading.Thread(target=body, args=(k,), name=f"nxcc-core{k}", daemon=True)
               for k in range(1, n)]
    for t in threads:
        t.start()
    body(0)
    for t in threads:
        t.join()
    real = [e for e in errors if e is not None and not isinstance(e, CollectiveMismatch)]
    stopped = [e for e in real if isinstance(e, ExecutionStopped)]
    first = (stopped or real or [e for e in errors if e is not None] or [None])[0]
    if first is not None:
        raise first
    return results  # type: ignore[return-value]


def _blas_share(n: int) -> int:
    import os

    return max(1, (os.cpu_count() or 1) // max(n, 1))


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
