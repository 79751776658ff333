"""The runtime's Python API: `load(neff) -> Model`, a NEFF loaded on NeuronCores.

    with nxcc.load("mlp.neff") as model:        # placed as NEURON_RT_* and the seed say
        outputs = model(x)                      # {"output name": array, ...}

One load path whatever the NEFF holds: a model on one core, an `-lnc 2` NEFF on the two
physical cores of a logical core, an SPMD program as `world_size` ranks (global inputs in,
global outputs out) in this process, or, under an MPI launcher (`mpiexec -n P python ...`),
as ranks spread over the launcher's processes. Models of one process share its runtime
(`shared_runtime`): they go to the least used of the process's cores unless `start_nc` /
`nc_count` or a placement context (`placement.neuron_cores_context`) say otherwise.

The output rule: a call returns a dict of the outputs keyed by name, in the NEFF's output
order (what `neuronx-cc run --output` writes to its npz). Under an MPI launcher process 0
gets the global outputs and every other process an empty dict (`Model.is_root` says which).
Every refusal is an `nxcc.Error`: NeffError for a NEFF that cannot be read, NrtError with
its status for the rest.

Asynchronous execution, as libnrt has it: with NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS
> 0, `Model.execute_async(...)` returns a `concurrent.futures.Future` of the outputs, and
each completion is posted first to the process's status callback
(`register_async_exec_callback(callback, params)`, libnrt's
`nrt_register_async_exec_callback`: `callback(params, model_id, vnc, job_id, status)` on
the execution thread); without one the default callback logs the status.
"""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from nxcc.backend.neff import NeffFile
from nxcc.backend.neff.artifact import Neff
from nxcc.backend.runtime.benchmark import BenchmarkResult, measure, random_inputs
from nxcc.backend.runtime.collective_binding import CollectiveBinding
from nxcc.backend.runtime.config import ConfigError, RuntimeConfig, default_runtime_dir
from nxcc.backend.runtime.handle import ModelHandle
from nxcc.backend.runtime.load_plan import SpmdRun
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.mpi_job import MpiJob, launched_processes
from nxcc.backend.runtime.nrt import AsyncExecCallback, NeffSource, Runtime, read_source
from nxcc.backend.runtime.placement import AUTO
from nxcc.backend.runtime.profile import Profiler, attach
from nxcc.backend.runtime.shared_runtime import RUNTIMES
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.steps import run_steps

Arrays = dict[str, np.ndarray]


def load(neff: NeffSource, *, start_nc: int | None = None, nc_count: int | None = None,
         world_size: int | None = None, output_shardings: Sequence[str] | None = None
         ) -> Model:
    """Load `neff` (a path, bytes, an `nxcc.Neff`) on this process's NeuronCores.

    `start_nc` / `nc_count`: the first core (relative to the process's cores) and how many
    cores; a count that is a multiple of what the model needs replicates it, and calls go
    to the replicas in turn. Default: the placement context's values, else automatic.
    `world_size`: run an SPMD program as that many ranks (needed for one); under an MPI
    launcher, None means one rank per process. `output_shardings`: HLO sharding text, once
    per output, for SPMD outputs the program gives no layout for.
    """
    return load_model(neff, start_nc=start_nc, nc_count=nc_count, world_size=world_size,
                      output_shardings=output_shardings)


def register_async_exec_callback(callback: AsyncExecCallback | None,
                                 params: Any = None) -> None:
    """libnrt's `nrt_register_async_exec_callback` for this process: `callback(params,
    model_id, vnc, job_id, status)` (the model's runtime id, the logical NeuronCore it ran
    on, the request's number, an `NrtStatus`) is called on the execution thread as each
    `Model.execute_async` completes, before its future is done. A later registration
    replaces it; None restores the default callback, which logs the status (NRT: INFO on
    success, ERROR otherwise). A callback that raises is logged; the execution's outcome
    stands. NrtError(INVALID) for a callback that is not callable."""
    RUNTIMES.register_async_exec_callback(callback, params)


def load_model(neff: NeffSource, *, start_nc: int | None = None, nc_count: int | None = None,
               world_size: int | None = None, output_shardings: Sequence[str] | None = None,
               on_joined: Callable[[], None] | None = None) -> Model:
    """`load`; under an MPI launcher `on_joined()` is called once this process has met the
    job's other processes (the command line's rank process needs to know)."""
    started = time.perf_counter()
    config = RuntimeConfig.from_env()
    neff_file = read_source(neff, config.validate_hash)
    source = _source_name(neff, neff_file)
    spmd = neff_file.manifest.get("spmd")
    if spmd is not None and launched_processes() > 1:
        return _joined(config, neff_file, None, source, started, world_size,
                       output_shardings, on_joined)
    check_world_size(source, spmd, world_size, output_shardings)
    run = SpmdRun(world_size, output_shardings or None) if world_size is not None else None
    runtime = RUNTIMES.acquire(config, neff_file.manifest.get("target"))
    try:
        handle = runtime.load(neff_file, _relative(start_nc), _relative(nc_count), spmd=run)
    except BaseException:
        RUNTIMES.release(runtime)
        raise
    return Model(source, runtime, handle, time.perf_counter() - started)


def join_job(source: str, prepare: Callable[[RuntimeConfig], NeffFile], *,
             world_size: int | None = None, output_shardings: Sequence[str] | None = None,
             on_joined: Callable[[], None] | None = None) -> Model:
    """Under an MPI launcher, load the SPMD program `prepare(config)` returns (`source` names
    it) as the job's ranks, so that a refusal in any process ends every process.

    A process whose settings (`NEURON_RT_*`) or `prepare` are refused still joins the job
    and says so; every process then raises, the others with an NrtError naming it. (A
    process that left before joining would leave the others waiting in MPI's first
    exchange.) After this, the model's calls agree on failures the same way."""
    started = time.perf_counter()
    failure: Exception | None = None
    try:
        config = RuntimeConfig.from_env()
    except ConfigError as exc:  # join with the defaults, to say so to the others
        config = RuntimeConfig(runtime_dir=os.environ.get("NXCC_RUNTIME_DIR")
                               or default_runtime_dir())
        failure = exc
    neff_file = None
    if failure is None:
        try:
            neff_file = prepare(config)
        except Exception as exc:  # said to every process, then raised here
            failure = exc
    return _joined(config, neff_file, failure, source, started, world_size, output_shardings,
                   on_joined)


def _joined(config: RuntimeConfig, neff_file: NeffFile | None, failure: Exception | None,
            source: str, started: float, world_size: int | None,
            output_shardings: Sequence[str] | None, on_joined: Callable[[], None] | None
            ) -> Model:
    """Join the MPI job, agree on `failure` (this process's, or None), load `neff_file`."""
    job = MpiJob(config, world_size)
    if on_joined is not None:
        on_joined()
    try:
        job.agree_on(failure)
        assert neff_file is not None
        job.load(neff_file, list(output_shardings or ()) or None)
    except BaseException as exc:
        job.abandon(str(exc))
        raise
    assert job.model is not None
    return Model(source, job.runtime, job.model, time.perf_counter() - started, job=job)


def check_world_size(source: str, spmd: object, world_size: int | None,
                     output_shardings: Sequence[str] | None) -> None:
    """NrtError(INVALID) for an SPMD program without a world size, or output shardings
    without one."""
    if world_size is not None:
        return
    if output_shardings:
        raise NrtError(NrtStatus.INVALID, "output_shardings apply to an SPMD program run "
                       "with world_size")
    if spmd is not None:
        ranks = spmd.get("world_size") if isinstance(spmd, dict) else None
        raise NrtError(NrtStatus.INVALID, f"{source} is an SPMD program"
                       + (f" partitioned for {ranks} ranks" if ranks else "")
                       + f"; load it with world_size={ranks or 'N'}")


class Model:
    """A NEFF loaded on NeuronCores (see the module docstring); `close()` unloads it, as
    does the end of a `with` block or the model's garbage collection."""

    def __init__(self, source: str, runtime: Runtime, handle: ModelHandle,
                 load_seconds: float, job: MpiJob | None = None) -> None:
        self.source = source
        """The NEFF's path as given (`<memory>` for bytes or an `nxcc.compile` result
        without `output`)."""
        self.name: str = handle.name
        self.inputs: list[TensorInfo] = list(handle.inputs)
        """Name, dtype and shape of each input, in the NEFF's order."""
        self.outputs: list[TensorInfo] = list(handle.outputs)
        """Name, dtype and shape of each output, in the NEFF's order."""
        self.load_seconds = load_seconds
        """Wall time of the load: reading the NEFF, the runtime's init, placing it."""
        self._runtime, self._handle, self._job = runtime, handle, job
        self._finalizer = weakref.finalize(self, _unload, runtime, handle, job)

    # what and where

    @property
    def handle(self) -> ModelHandle:
        """The runtime's handle: replicas, execution history (`history`), bindings."""
        return self._handle

    @property
    def replicas(self) -> list[tuple[int, ...]]:
        """The global logical NeuronCores of each replica (an SPMD model: one per rank)."""
        return [r.cores for r in self._handle.replicas]

    @property
    def cores(self) -> tuple[int, ...]:
        """Every global logical NeuronCore the model occupies, replica by replica."""
        return tuple(c for cores in self.replicas for c in cores)

    @property
    def instance(self) -> str:
        """The simulated instance type (NXCC_INSTANCE_TYPE, else the target's default)."""
        assert self._runtime.instance is not None
        return self._runtime.instance.name

    @property
    def lnc(self) -> int:
        """The runtime's logical NeuronCore size."""
        return self._runtime.lnc

    @property
    def bindings(self) -> list[CollectiveBinding]:
        """How each collective was bound at load (empty for a model on one core)."""
        return self._handle.bindings

    @property
    def is_root(self) -> bool:
        """Whether calls return the outputs here: always, except in the processes other
        than process 0 of an MPI job."""
        return self._job is None or self._job.is_root

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    # running

    def __call__(self, /, *arrays: np.ndarray, **named: np.ndarray) -> Arrays:
        """Run once on `arrays` (the inputs in order) and `named` (inputs by name); the
        outputs by name in the NEFF's output order (see the module docstring)."""
        feeds = self._feeds(arrays, named)
        if self._job is not None:
            return self._job_call(feeds)
        return self._ordered(self._runtime.execute(self._handle, feeds))

    def execute_async(self, /, *arrays: np.ndarray, **named: np.ndarray) -> Future[Arrays]:
        """Queue one call (inputs as for a call; keep them unchanged until it is done): a
        future of the outputs, as a call returns them. Needs
        NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0 (NrtError(INVALID) otherwise); at
        most that many queued or running (NrtError(QUEUE_FULL) beyond). Each completion is
        posted to the process's status callback (`register_async_exec_callback`) before
        the future is done."""
        self._local("execute_async")
        inner = self._runtime.execute_async(self._handle, self._feeds(arrays, named))
        outer: Future[Arrays] = Future()

        def done(finished: Future) -> None:
            if finished.cancelled():  # the runtime closed before it ran
                outer.set_exception(NrtError(NrtStatus.CLOSED, f"model '{self.name}': the "
                                             "runtime closed before the execution ran"))
                return
            error = finished.exception()
            if error is not None:
                outer.set_exception(error)
            else:
                outer.set_result(self._ordered(finished.result()))

        outer.set_running_or_notify_cancel()
        inner.add_done_callback(done)
        return outer

    def run_steps(self, steps: int, /, *arrays: np.ndarray, **named: np.ndarray) -> Arrays:
        """Run `steps` times on the same inputs, as a training loop does: a model with state
        updates it each time, an output aliased to an input feeds it the next step. The
        aliased outputs of the last step, every other output stacked along a new first
        axis (a scalar loss becomes shape (steps,))."""
        self._local("run_steps")
        return self._ordered(run_steps(self._runtime, self._handle,
                                       self._feeds(arrays, named), steps))

    def state(self) -> Arrays:
        """The state kept between calls (a training NEFF's parameters and optimizer slots),
        by name, as copies; empty for a model without state."""
        self._local("state")
        return self._handle.state()

    def load_state(self, arrays: Mapping[str, np.ndarray]) -> None:
        """Replace the state (every replica's); NrtError(INVALID) naming the first name,
        shape or dtype that does not match, and nothing changed then."""
        self._local("load_state")
        self._handle.load_state(arrays)

    def benchmark(self, inputs: Mapping[str, np.ndarray] | Sequence[np.ndarray] | None = None,
                  *, warmup: int = 10, iterations: int | None = None,
                  duration: float | None = None) -> BenchmarkResult:
        """Time `warmup` untimed then `iterations` timed calls (or calls for `duration`
        seconds; neither: 100) on `inputs` (by name or in order; default: random inputs of
        the model's types, seeded): latency percentiles, throughput, this load's time and
        the process's peak memory (`neuronx-cc benchmark`'s figures)."""
        self._local("benchmark")
        if iterations is not None and duration is not None:
            raise NrtError(NrtStatus.INVALID, "give iterations or duration, not both")
        if inputs is None:
            feeds = random_inputs(self.inputs)
        elif isinstance(inputs, Mapping):
            feeds = self._feeds((), dict(inputs))
        else:
            feeds = self._feeds(tuple(inputs), {})
        return measure(lambda: self._runtime.execute(self._handle, feeds), self.source,
                       self.name, self.load_seconds, warmup, iterations, duration)

    def profile(self) -> Profiler:
        """Trace the calls from now on: the returned profiler's `write(path)` saves a
        Chrome/Perfetto trace, per rank compute ops and collectives on separate tracks."""
        self._local("profile")
        profiler = Profiler()
        for replica in self._handle.replicas:
            attach(replica.model, profiler)
        return profiler

    def close(self) -> None:
        """Unload the model (its cores are free for others; the last model of the process
        gives the cores back). Idempotent."""
        self._finalizer()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"on {self.instance} cores {list(self.cores)}"
        return f"Model({self.name!r}, {state})"

    # internals

    def _feeds(self, arrays: Sequence[object], named: Mapping[str, object]) -> Arrays:
        """The inputs by name: `arrays` are the first inputs in order, `named` the others."""
        if self.closed:
            raise NrtError(NrtStatus.INVALID_HANDLE, f"model '{self.name}' is closed")
        names = [i.name for i in self.inputs]
        if len(arrays) > len(names):
            raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"{len(arrays)} arrays given; model "
                           f"'{self.name}' takes {len(names)} inputs ({', '.join(names)})")
        feeds = dict(zip(names, arrays, strict=False))
        twice = sorted(set(feeds) & set(named))
        if twice:
            raise NrtError(NrtStatus.EXEC_BAD_INPUT, f"input {twice[0]!r} given both in "
                           "order and by name")
        feeds.update(named)
        return {k: v if isinstance(v, np.ndarray) else np.asarray(v) for k, v in feeds.items()}

    def _ordered(self, outputs: Mapping[str, np.ndarray]) -> Arrays:
        return {o.name: outputs[o.name] for o in self.outputs if o.name in outputs}

    def _job_call(self, feeds: Arrays) -> Arrays:
        assert self._job is not None
        try:
            outputs = self._job.execute(feeds)
        except BaseException as exc:
            self._finalizer.detach()
            self._job.abandon(str(exc))
            raise
        return self._ordered(outputs) if outputs is not None else {}

    def _local(self, what: str) -> None:
        if self.closed:
            raise NrtError(NrtStatus.INVALID_HANDLE, f"model '{self.name}' is closed")
        if self._job is not None:
            raise NrtError(NrtStatus.INVALID, f"{what} runs the ranks of one process; under "
                           "an MPI launcher only calls are supported")


def _unload(runtime: Runtime, handle: ModelHandle, job: MpiJob | None) -> None:
    """Unload `handle` and let go of the runtime (a job's own runtime is closed)."""
    if job is not None:
        job.close()
        return
    try:
        if handle.loaded:
            runtime.unload(handle)
    except NrtError:  # the runtime was closed under the model (process exit)
        pass
    RUNTIMES.release(runtime)


def _relative(index: int | None) -> int:
    return AUTO if index is None else index


def _source_name(neff: NeffSource, neff_file: NeffFile) -> str:
    if isinstance(neff, Neff):
        return "<memory>" if neff.temporary or neff.path is None else neff.path
    if isinstance(neff, bytes | bytearray | memoryview):
        return "<memory>"
    if isinstance(neff, NeffFile):
        return str(neff.path)
    return os.fspath(neff)
