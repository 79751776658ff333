"""The executor: runs one core's program with the kernels, in planned buffers.

`ProgramExecutor(program, weights)` prepares every function once: decoded attributes,
kernels, and per-slot sources. Each executor owns its arenas (one per function), so one
executor serves one worker at a time; make one per core (or per thread).

`should_stop`, when given, is polled when a function starts and between instructions (so
also on every iteration of a `while` loop, whose condition and body run through `call`);
when it returns True the execution raises `ExecutionStopped`. The runtime uses it to enforce
`NEURON_RT_EXEC_TIMEOUT`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from nxcc.backend.program.attr_codec import decode_attr, decode_attrs
from nxcc.ir.attributes import AttrValue, Dense
from nxcc.ir.dtypes import DType
from nxcc.ir.interpreter import allocate_results
from nxcc.ir.kernels import get_kernel
from nxcc.ir.types import TensorType


class ExecutionError(RuntimeError):
    """A kernel failed; the message names the function, the instruction and the op."""


class ExecutionStopped(ExecutionError):
    """`should_stop` asked the execution to stop (e.g. its timeout passed)."""


class Communicator(Protocol):
    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]: ...


class _Function:
    """One function's prepared instructions and its arena (allocated on first run)."""

    def __init__(self, name: str, spec: dict, weights: Mapping[str, np.ndarray]) -> None:
        self.name = name
        self.spec = spec
        self.binary_opcode: str | None = spec.get("binary_opcode")
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

        self.instructions = [
            (get_kernel(ins["op"]), ins["args"], ins["outs"],
             decode_attrs(ins["attrs"], load_weight), ins["op"])
            for ins in spec["instructions"]
        ]
        self.params: list[int] = spec["params"]
        self.results: list[int] = spec["results"]
        self._views: dict[int, np.ndarray] | None = None

    def views(self) -> dict[int, np.ndarray]:
        """Arrays over the arena for every buffer slot (made once)."""
        if self._views is None:
            arena = np.empty(max(self.arena_bytes, 1), np.uint8)
            self._views = {}
            for i, (s, t) in enumerate(zip(self.spec["slots"], self.types, strict=True)):
                if s["kind"] == "buffer":
                    self._views[i] = np.ndarray(t.shape, t.dtype.numpy, arena, s["offset"])
        return self._views


class ProgramExecutor:
    """Runs the functions of one program; `run(args)` executes the entry function."""

    def __init__(self, program: dict, weights: Mapping[str, np.ndarray],
                 communicator: Communicator | None = None, partition_id: int = 0,
                 replica_id: int = 0, should_stop: Callable[[], bool] | None = None) -> None:
        self.entry = program["entry"]
        self.functions = {n: _Function(n, f, weights) for n, f in program["functions"].items()}
        self.communicator = communicator
        self.partition_id = partition_id
        self.replica_id = replica_id
        self.should_stop = should_stop

    def run(self, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The entry function's results (fresh arrays) for `args` (exact types)."""
        return self.call(self.entry, args)

    # KernelContext

    def call(self, function: str, args: Sequence[np.ndarray]) -> list[np.ndarray]:
        fn = self.functions[function]
        stop = self.should_stop
        if stop is not None and stop():
            raise ExecutionStopped(f"stopped before @{function}")
        env: dict[int, np.ndarray] = dict(fn.fixed)
        # A scalar computation called on whole arrays runs elementwise, in fresh arrays;
        # otherwise results go to the planned buffers.
        planned = all(np.shape(a) == fn.types[s].shape
                      for s, a in zip(fn.params, args, strict=True))
        if planned:
            env.update(fn.views())
        for slot, a in zip(fn.params, args, strict=True):
            env[slot] = a
        for index, (kern, ins, outs, attrs, opcode) in enumerate(fn.instructions):
            if stop is not None and stop():
                raise ExecutionStopped(f"stopped at instruction {index} ({opcode}) of @{function}")
            try:
                in_arrays = [env[i] for i in ins]
                if not planned:
                    fresh = allocate_results(opcode, [fn.types[o] for o in outs], in_arrays)
                    env.update(zip(outs, fresh, strict=True))
                kern(in_arrays, [env[o] for o in outs], attrs, self)
            except ExecutionError:
                raise
            except Exception as exc:
                raise ExecutionError(
                    f"while executing instruction {index} ({opcode}) of @{function}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
        return [np.array(env[r], copy=True) for r in fn.results]

    def binary_opcode(self, function: str) -> str | None:
        return self.functions[function].binary_opcode

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        if self.communicator is None:
            raise ExecutionError(f"{opcode}: this program runs on one core, with no communicator")
        return self.communicator.collective(opcode, args, attrs)


def _as_type(arr: np.ndarray, t: TensorType) -> np.ndarray:
    """A weight array viewed as its slot type (npy stores bfloat16 as raw 2-byte voids)."""
    if arr.dtype != t.dtype.numpy:
        arr = arr.view(t.dtype.numpy)
    return arr.reshape(t.shape)


def _no_weight(name: str) -> Dense:
    raise AssertionError("a splat holds a scalar")
