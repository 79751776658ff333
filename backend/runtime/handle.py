"""A loaded model: its replicas on cores, round-robin execution, and the execution timeout.

Each replica is a `LoadedModel` (its own executors and buffers) on the cores starting at
`replica.core`; with NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS the replicas (and other loads of
the same NEFF) share one weights dict (`shared_weights`), else each reads its own copy.
`execute` picks the next replica in turn (thread-safe) and runs on it under that replica's
lock, so concurrent callers use the replicas in parallel.
An execution still running `timeout` seconds after it started is stopped at its next
instruction and raises NrtError(TIMEOUT); the replica is free again right after.
"""

from __future__ import annotations

import collections
import itertools
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from nxcc.backend.runtime.collective_binding import CollectiveBinding
from nxcc.backend.runtime.collective_groups import Membership
from nxcc.backend.runtime.executor import ExecutionStopped
from nxcc.backend.runtime.log import logger
from nxcc.backend.runtime.model import LoadedModel, TensorInfo
from nxcc.backend.runtime.spmd import SpmdModel
from nxcc.backend.runtime.status import NrtError, NrtStatus

HISTORY = 4096
_ids = itertools.count(1)


class Replica:
    """One copy of a model on the cores `cores` (global logical indices)."""

    def __init__(self, cores: tuple[int, ...], device: int) -> None:
        self.cores = cores
        self.core = cores[0]
        self.device = device
        self.lock = threading.Lock()
        self.deadline: float | None = None
        self.model: LoadedModel | SpmdModel | None = None

    def expired(self) -> bool:
        """The executors' `should_stop`: True once the current execution's deadline passed."""
        d = self.deadline
        return d is not None and time.monotonic() > d


class ModelHandle:
    """What `Runtime.load` returns. `cores` lists each replica's first core (global)."""

    def __init__(self, name: str, source: Path, manifest: dict, needed: int,
                 starts: list[int], replicas: list[Replica]) -> None:
        self.id = next(_ids)
        self.name = name
        self.source = source
        self.manifest = manifest
        self.needed = needed
        self.starts = starts
        self.replicas = replicas
        first = replicas[0].model
        assert first is not None
        self.inputs: list[TensorInfo] = first.inputs
        self.outputs: list[TensorInfo] = first.outputs
        self.history: collections.deque[int] = collections.deque(maxlen=HISTORY)
        self.loaded = True
        self.membership: Membership | None = None
        self._turn = itertools.count()
        self._lock = threading.Lock()

    @property
    def cores(self) -> list[int]:
        return [r.core for r in self.replicas]

    @property
    def bindings(self) -> list[CollectiveBinding]:
        """How the first replica's collectives were bound at load (one per manifest
        collective; empty for a model on one core). See `collective_binding`."""
        model = self.replicas[0].model
        return list(model.bindings) if model is not None else []

    def __repr__(self) -> str:
        return f"ModelHandle({self.name!r}, cores={self.cores})"

    def state(self) -> dict[str, np.ndarray]:
        """The state the model keeps between executions (a training step's parameters and
        optimizer slots), by name, as copies; empty for a model without state."""
        model = self.replicas[0].model
        state = getattr(model, "state", None)
        with self.replicas[0].lock:
            return state.snapshot() if state else {}

    def load_state(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the state of every replica; NrtError(INVALID) naming the first name,
        shape or dtype that does not match (nothing is changed then)."""
        states = [getattr(r.model, "state", None) for r in self.replicas]
        if not all(states):
            raise NrtError(NrtStatus.INVALID, f"model '{self.name}' keeps no state")
        for replica, state in zip(self.replicas, states, strict=True):
            with replica.lock:
                state.load(arrays)  # type: ignore[union-attr]

    def execute(self, inputs: Mapping[str, np.ndarray], timeout: int,
                where: list[int] | None = None) -> dict[str, np.ndarray]:
        """Run once on the next replica; NrtError(TIMEOUT) past `timeout` s (0: no limit).
        `where`, when given, receives the first core of the replica taken (even when the
        execution then fails)."""
        if len(self.replicas) == 1:
            replica = self.replicas[0]
        else:
            with self._lock:
                replica = self.replicas[next(self._turn) % len(self.replicas)]
        if where is not None:
            where.append(replica.core)
        model = replica.model
        assert model is not None
        args = model.check_inputs(inputs)  # a bad input fails before the replica is taken
        with replica.lock:
            self.history.append(replica.core)
            started = time.monotonic()
            replica.deadline = started + timeout if timeout > 0 else None
            try:
                return model.run(args)
            except NrtError as exc:
                if isinstance(exc.__cause__, ExecutionStopped):
                    raise self._timeout(replica, timeout, started) from None
                raise
            finally:
                replica.deadline = None

    def _timeout(self, replica: Replica, timeout: int, started: float) -> NrtError:
        ms = timeout * 1000
        logger("TDRV").error(
            "(FATAL-RT-UNDEFINED-STATE) inference timeout (%d ms) on Neuron Device %d NC %d, "
            "waiting for execution completion notification", ms, replica.device, replica.core)
        return NrtError(NrtStatus.TIMEOUT,
                        f"execution of model '{self.name}' on nc{replica.core} did not complete "
                        f"within NEURON_RT_EXEC_TIMEOUT={timeout} s (stopped after "
                        f"{time.monotonic() - started:.2f} s); raise NEURON_RT_EXEC_TIMEOUT if "
                        "the model needs longer")
