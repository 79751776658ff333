"""The executor: runs one core's program with the kernels, in planned buffers.

`ProgramExecutor(program, weights)` prepares every function once: decoded attributes,
kernels, per-slot arrays and, on first use, its arena, one buffer per parameter, and the
instructions bound to those fixed arrays (`bound_steps`: a flat list of zero-argument
callables, the cheap ops reduced to one numpy call). A run then copies the arguments into
the parameter buffers and calls the steps in order, with floating-point errors ignored once
around the whole function: no per-instruction dispatch, dtype decision, error-state switch
or poll (about 1 us per cheap instruction, `bench/executor_overhead.py`). Each executor owns
its arenas (one per function), so one executor serves one worker at a time; make one per
core (or per thread).

A scalar computation called on whole arrays of other shapes (a reducer applied elementwise
by a kernel) runs op by op in fresh arrays instead.

`should_stop`, when given, is polled when a function starts (so also on every iteration of
a `while` loop, whose condition and body run through `call`), not between instructions;
when it returns True the execution raises `ExecutionStopped`. The runtime uses it to enforce
`NEURON_RT_EXEC_TIMEOUT`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

from nxcc.backend.program.attr_codec import decode_attr, decode_attrs
from nxcc.backend.program.view_layout import view_sources
from nxcc.backend.runtime import float_errors
from nxcc.backend.runtime.async_comm import DONES, STARTS
from nxcc.backend.runtime.blas_threads import blas_thread_count, limit_process
from nxcc.backend.runtime.bound_steps import bind_step
from nxcc.backend.runtime.parallel_steps import blas_instructions, blas_work_split, is_split
from nxcc.backend.runtime.profile import COMPUTE
from nxcc.ir.attributes import AttrValue, Dense
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import allocate_results
from nxcc.ir.kernels import KERNELS
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.collective import collective_into, copy_results
from nxcc.ir.kernels.plan import Step
from nxcc.ir.kernels.scratch_pool import ScratchPool
from nxcc.ir.opdef import OpDef, get_opdef
from nxcc.ir.types import TensorType

if TYPE_CHECKING:
    from nxcc.backend.runtime.profile import Profiler


class ExecutionError(RuntimeError):
    """A kernel failed; the message names the function, the instruction and the op."""


class ExecutionStopped(ExecutionError):
    """`should_stop` asked the execution to stop (e.g. its timeout passed)."""


class Communicator(Protocol):
    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]: ...


class _Function:
    """One function's prepared instructions, its arena and its bound steps (made on first
    planned run)."""

    def __init__(self, name: str, spec: dict, weights: Mapping[str, np.ndarray]) -> None:
        self.name = name
        self.spec = spec
        binary = spec.get("binary_opcode")
        self.binary_op: OpDef | None = get_opdef(binary) if binary else None
        self.arena_bytes = int(spec["arena_bytes"])
        self.types = [TensorType(DType.from_name(s["dtype"]), tuple(s["shape"]))
                      for s in spec["slots"]]
        self.fixed: dict[int, np.ndarray] = {}
        for i, (s, t) in enumerate(zip(spec["slots"], self.types, strict=True)):
            if s["kind"] == "weight":
                self.fixed[i] = _as_type(weights[s["name"]], t)
            elif s["kind"] == "splat":
                one = np.array(decode_attr(s["value"], _no_weight)).astype(t.dtype.numpy)
                self.fixed[i] = np.broadcast_to(one, t.shape)

        def load_weight(name: str) -> Dense:
            arr = weights[name]
            return Dense(TensorType(DType.from_numpy(arr.dtype), arr.shape), arr)

        opdefs = [get_opdef(ins["op"]) for ins in spec["instructions"]]
        self.instructions = [
            (KERNELS[opdef], ins["args"], ins["outs"],
             decode_attrs(ins["attrs"], load_weight), opdef)
            for ins, opdef in zip(spec["instructions"], opdefs, strict=True)
        ]
        self.params: list[int] = spec["params"]
        self.results: list[int] = spec["results"]
        self.param_shapes = [self.types[p].shape for p in self.params]
        self._bound: _Bound | None = None
        self.outside: dict[int, np.ndarray] = {}
        """Slot -> the caller's array that is that slot's buffer (`bind_buffers`)."""
        last = {o: i for i, ins in enumerate(spec["instructions"]) for o in ins["outs"]}
        self.ready_after: dict[int, list[int]] = {}
        """Instruction index -> the results whose value is final after it (-1: before
        the first, results no instruction writes); a view is final when its root is."""
        for k, r in enumerate(self.results):
            root = [r, *view_sources(spec["slots"], r)][-1]  # a view: the slot it views
            self.ready_after.setdefault(last.get(root, -1), []).append(k)

    def bound(self, ctx: KernelContext) -> _Bound:
        """The arena, parameter buffers and bound steps (made once)."""
        if self._bound is None:
            self._bound = _Bound(self, ctx)
        return self._bound


class _Bound:
    """Every slot of a function at a fixed array, and its instructions bound to them."""

    def __init__(self, fn: _Function, ctx: KernelContext) -> None:
        arena = np.empty(max(fn.arena_bytes, 1), np.uint8)
        arrays: dict[int, np.ndarray] = dict(fn.fixed)
        for i, (s, t) in enumerate(zip(fn.spec["slots"], fn.types, strict=True)):
            if s["kind"] == "buffer":  # a view of another slot's buffer may have strides
                arrays[i] = np.ndarray(t.shape, t.dtype.numpy, arena, s["offset"],
                                       s.get("strides"))
        for p in fn.params:
            arrays[p] = np.empty(fn.types[p].shape, fn.types[p].dtype.numpy)
        arrays.update(fn.outside)
        self.param_buffers = [arrays[p] for p in fn.params]
        self.results = [arrays[r] for r in fn.results]
        self.read_only = [_read_only(r) for r in self.results]
        pool = ScratchPool()  # the steps run one at a time: they share their scratch
        threads = threads_for(ctx)
        # and so do the slabs of split steps, slab k of one with slab k of the others
        slab_pools = [pool, *(ScratchPool() for _ in range(threads - 1))]

        def bind(k: int, threads: int) -> Step:
            kern, ins, outs, attrs, opdef = fn.instructions[k]
            return bind_step(opdef, kern, [arrays[i] for i in ins], [arrays[o] for o in outs],
                             attrs, ctx, [i in fn.fixed for i in ins], pool, threads,
                             slab_pools)

        # The products first: the core's threads are the executor's only when every one of
        # them splits (parallel_steps); otherwise nothing is split, and the BLAS keeps them.
        steps: dict[int, Step] = {k: bind(k, threads) for k in blas_instructions(fn.instructions)}
        sizes = [sum(arrays[i].size for i in (*fn.instructions[k][1], *fn.instructions[k][2]))
                 for k in steps]
        if threads > 1 and not blas_work_split(sizes, list(steps.values())):
            threads = 1
            steps = {k: bind(k, 1) if is_split(s) else s for k, s in steps.items()}
        self.steps = [steps[k] if k in steps else bind(k, threads)
                      for k in range(len(fn.instructions))]
        _join_adjacent_collectives(fn.instructions, arrays, self.steps, ctx)
        self.names = [opdef.name for *_, opdef in fn.instructions]
        self.own_threads = any(is_split(s) for s in self.steps)
        """Its instructions are split between the core's threads: run the BLAS at one."""


class ProgramExecutor:
    """Runs the functions of one program; `run(args)` executes the entry function."""

    def __init__(self, program: dict, weights: Mapping[str, np.ndarray],
                 communicator: Communicator | None = None, partition_id: int = 0,
                 replica_id: int = 0, should_stop: Callable[[], bool] | None = None,
                 threads: int | None = None) -> None:
        self.entry = program["entry"]
        self.functions = {n: _Function(n, f, weights) for n, f in program["functions"].items()}
        self.communicator = communicator
        self.partition_id = partition_id
        self.replica_id = replica_id
        self.should_stop = should_stop
        self.profiler: Profiler | None = None  # set by `profile.attach`
        self.rank = partition_id
        self.threads = threads
        """Threads a large elementwise instruction may run on (`parallel_steps`); None: as
        many as the BLAS uses when the function is first bound (1 for executors that run
        side by side, a core or rank each). Set before the first run."""
        self.spans: dict[str, list[str | None]] | None = None
        """With a profiler: None records every op; else, for each function named here, its
        runs of consecutive instructions with the same label as one event named by the
        label (a trainer's forward, recomputation, backward; None: not recorded), other
        functions not at all."""

    def run(self, args: Sequence[np.ndarray],
            on_result: Callable[[int, np.ndarray], None] | None = None, *,
            copy: bool = True) -> list[np.ndarray]:
        """The entry function's results (fresh arrays) for `args` (exact types). With
        `on_result`, each result is also handed over (index, a copy) as soon as the
        instruction that writes it last has run, while the rest of the program goes on (a
        trainer starts reducing gradients during the backward pass). With `copy` false,
        the results (and what `on_result` gets) are read-only views of the executor's own
        buffers instead, valid until its next run: for a caller that copies what it keeps
        (the trainer adds gradients into its flat vector) and would otherwise pay for a
        fresh copy of every result."""
        fn = self.functions[self.entry]
        if on_result is None and copy:
            return self.call(self.entry, args)
        if not all(_shape(a) == s for a, s in zip(args, fn.param_shapes, strict=True)):
            raise ExecutionError(f"@{fn.name}: arguments of other shapes than its parameters")
        return self._run_bound(fn, args, on_result, copy)

    def bind_buffers(self, params: Mapping[int, np.ndarray] | None = None,
                     results: Mapping[int, np.ndarray] | None = None) -> list[int]:
        """Let the caller's arrays be the entry function's buffers from the next run on:
        parameter i lives in `params[i]` (each run reads its values then; an argument that
        is that very array is not copied, another one is copied into it), and result k is
        written straight into `results[k]` where the program allows (its own buffer,
        viewed by no other value); each array C-contiguous of the slot's shape and dtype
        (ValueError otherwise). Returns the results written in place; the others are
        computed as before. The caller must not read a bound result while a run is going
        on."""
        fn = self.functions[self.entry]
        outside: dict[int, np.ndarray] = {}
        for k, a in (params or {}).items():
            outside[fn.params[k]] = _checked(fn, fn.params[k], a, f"parameter {k}")
        viewed = {s.get("view_of") for s in fn.spec["slots"]}
        placed = []
        for k, a in sorted((results or {}).items()):
            r = fn.results[k]
            slot = fn.spec["slots"][r]
            if (slot["kind"] == "buffer" and "view_of" not in slot and r not in viewed
                    and fn.results.count(r) == 1):
                outside[r] = _checked(fn, r, a, f"result {k}")
                placed.append(k)
        fn.outside = outside
        fn._bound = None  # bound again, to these arrays, at the next run
        return placed

    # KernelContext

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        fn = self.functions[function]
        stop = self.should_stop
        if stop is not None and stop():
            raise ExecutionStopped(f"stopped before @{function}")
        # A scalar computation called on whole arrays runs elementwise, in fresh arrays;
        # otherwise results go to the planned buffers.
        if [a.shape if type(a) is np.ndarray else _shape(a) for a in args] == \
                fn.param_shapes:
            return self._run_bound(fn, args)
        return self._run_fresh(fn, args)

    def _run_bound(self, fn: _Function, args: Sequence[np.ndarray],
                   on_result: Callable[[int, np.ndarray], None] | None = None,
                   copy: bool = True) -> list[np.ndarray]:
        bound = fn._bound or fn.bound(self)
        for buffer, a in zip(bound.param_buffers, args, strict=True):
            if a is buffer:  # a bound parameter given as itself is read in place
                continue
            if type(a) is np.ndarray and a.dtype == buffer.dtype:
                buffer[...] = a  # half of np.copyto's cost on a small array
            else:
                np.copyto(buffer, a)
        index = 0
        quiet = float_errors.ignore()
        blas = limit_process(1, even_when_set=True) if bound.own_threads else None
        if blas is not None:
            blas.__enter__()
        try:
            if on_result is not None or self.profiler is not None:
                self._run_observed(fn, bound, on_result, copy)
            else:
                for index, step in enumerate(bound.steps):  # noqa: B007
                    step()
        except ExecutionError:
            raise
        except Exception as exc:
            raise _failure(fn, index, exc) from exc
        finally:
            if blas is not None:
                blas.__exit__(None, None, None)
            float_errors.restore(quiet)
        return [r.copy() for r in bound.results] if copy else bound.read_only

    def _run_observed(self, fn: _Function, bound: _Bound,
                      on_result: Callable[[int, np.ndarray], None] | None,
                      copy: bool = True) -> None:
        """The bound steps, each result handed to `on_result` once final (when given; a
        copy, or with `copy` false a read-only view), each step recorded by the profiler
        (when set; `spans`)."""
        ready = fn.ready_after if on_result is not None else {}
        results = bound.results if copy else bound.read_only

        def report(k: int) -> None:
            on_result(k, np.array(results[k], copy=True) if copy else results[k])  # type: ignore[misc]

        profiler, rank, clock = self.profiler, self.rank, time.perf_counter
        labels = self.spans.get(fn.name) if self.spans is not None else None
        per_op = profiler is not None and self.spans is None
        current, since = None, 0.0
        for k in ready.get(-1, ()):
            report(k)
        for index, step in enumerate(bound.steps):
            start = clock() if profiler is not None else 0.0
            step()
            if per_op:
                profiler.record(bound.names[index], rank, COMPUTE, start, clock())  # type: ignore[union-attr]
            elif labels is not None and labels[index] != current:
                if current is not None:
                    profiler.record(current, rank, COMPUTE, since, start)  # type: ignore[union-attr]
                current, since = labels[index], start
            for k in ready.get(index, ()):
                report(k)
        if current is not None:
            profiler.record(current, rank, COMPUTE, since, clock())  # type: ignore[union-attr]

    def _run_fresh(self, fn: _Function, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        env: dict[int, np.ndarray] = dict(fn.fixed)
        for slot, a in zip(fn.params, args, strict=True):
            env[slot] = a
        for index, (kern, ins, outs, attrs, opdef) in enumerate(fn.instructions):
            try:
                in_arrays = [env[i] for i in ins]
                fresh = allocate_results(opdef, [fn.types[o] for o in outs], in_arrays)
                env.update(zip(outs, fresh, strict=True))
                kern(in_arrays, fresh, attrs, self)
            except ExecutionError:
                raise
            except Exception as exc:
                raise _failure(fn, index, exc) from exc
        return [np.array(env[r], copy=True) for r in fn.results]

    def binary_op(self, function: str) -> OpDef | None:
        return self.functions[function].binary_op

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        if self.communicator is None:
            raise ExecutionError(f"{opcode}: this program runs on one core, with no communicator")
        return self.communicator.collective(opcode, args, attrs)

    def collective_into(self, opcode: str, args: Sequence[np.ndarray],
                        attrs: Mapping[str, AttrValue], outs: Sequence[np.ndarray]) -> None:
        """`collective` with its results written into `outs`: by the communicator itself
        when it offers `collective_into` (no fresh result arrays), else copied there."""
        into = getattr(self.communicator, "collective_into", None)
        if into is not None:
            into(opcode, args, attrs, outs)
        else:
            copy_results(opcode, outs, self.collective(opcode, args, attrs))


def _join_adjacent_collectives(instructions: list, arrays: dict[int, np.ndarray],
                               steps: list, ctx: KernelContext) -> None:
    """A `<kind>_start` whose `_done` is the very next instruction overlaps nothing: bind the
    pair as one synchronous `<kind>` at the done (the start does nothing), which the
    communicator can run without handing it to its communication thread."""
    for i in range(len(instructions) - 1):
        _, ins, outs, attrs, opdef = instructions[i]
        _, done_ins, done_outs, _, done_opdef = instructions[i + 1]
        kind = STARTS.get(opdef)
        if kind is None or done_opdef not in DONES or done_ins[:1] != outs[:1]:
            continue
        args = [arrays[k] for k in ins]
        results = [arrays[k] for k in done_outs]
        steps[i] = _nothing
        steps[i + 1] = functools.partial(collective_into, ctx, kind.name, args, attrs,
                                         results)


def _nothing() -> None:
    return None


def _failure(fn: _Function, index: int, exc: Exception) -> ExecutionError:
    opdef = fn.instructions[index][4]
    return ExecutionError(f"while executing instruction {index} ({opdef}) of @{fn.name}: "
                          f"{type(exc).__name__}: {exc}")


def threads_for(ctx: KernelContext) -> int:
    """The threads `ctx`'s large elementwise instructions may use: its `threads` when it
    says, else the BLAS's count for the calling thread (1 when unknown)."""
    threads = getattr(ctx, "threads", None)
    if threads is None:
        threads = blas_thread_count() or 1
    return max(1, int(threads))


def _checked(fn: _Function, slot: int, a: np.ndarray, what: str) -> np.ndarray:
    t = fn.types[slot]
    if not (isinstance(a, np.ndarray) and a.shape == t.shape and a.dtype == t.dtype.numpy
            and a.flags.c_contiguous):
        raise ValueError(f"@{fn.name}: {what} must be a C-contiguous {t.dtype.numpy}"
                         f"{list(t.shape)} array to be bound")
    return a


def _read_only(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


def _as_type(arr: np.ndarray, t: TensorType) -> np.ndarray:
    """A weight array viewed as its slot type (npy stores bfloat16 as raw 2-byte voids)."""
    if arr.dtype != t.dtype.numpy:
        arr = arr.view(t.dtype.numpy)
    return arr.reshape(t.shape)


def _no_weight(name: str) -> Dense:
    raise AssertionError("a splat holds a scalar")


def _shape(a: object) -> tuple[int, ...]:
    """The shape of an array argument (an attribute read), or of anything np.shape takes."""
    return a.shape if isinstance(a, np.ndarray) else np.asarray(a).shape
