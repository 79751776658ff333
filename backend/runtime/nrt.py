"""The runtime's API, shaped like libnrt (`nrt_init`, `nrt_load`, `nrt_execute`, ...).

    rt = Runtime()                      # reads nothing yet
    rt.init(target="trn1")              # env validated, logging set, cores reserved
    m = rt.load("model.neff")           # start_nc=-1, nc_count=-1: automatic placement
    w = rt.load("spmd.neff", spmd=SpmdRun(8))  # an SPMD program as 8 ranks (global in/out)
    m.bindings                          # how its collectives were bound (collective_binding)
    out = rt.execute(m, {"x": x})       # dict of outputs
    fut = rt.execute_async(m, {"x": x}) # concurrent.futures.Future (needs
                                        # NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0)
    rt.register_async_exec_callback(cb, params)  # cb(params, model_id, vnc, job_id, status)
    rt.unload(m); rt.close()            # or: with Runtime() as rt: ...

Every failure raises `NrtError` with the libnrt status: INVALID (bad configuration, LNC
mismatch, bad placement arguments, malformed NEFF), LOAD_NOT_ENOUGH_NC (cores held by another
process or not owned by this one), UNSUPPORTED_NEFF_VERSION (architecture), TIMEOUT,
QUEUE_FULL, EXEC_BAD_INPUT, INVALID_HANDLE (unloaded model), UNINITIALIZED, CLOSED.

`init(target)`: the instance simulated is NXCC_INSTANCE_TYPE, else the default instance of
`target` (a NEFF's target family), else trn1.32xlarge (`topology.choose_instance`).

Asynchronous completions, as libnrt posts them: when an `execute_async` request completes,
the execution thread calls the registered status callback (`nrt_register_async_exec_callback`'s
`callback(params, model_id, vnc, job_id, status)`: the model's id, the logical core it ran
on, the request's number and its `NrtStatus`) before the future is done. Without a
registered one, the default callback logs the status (NRT: INFO on success, ERROR
otherwise). A callback that raises is logged and does not change the future's outcome.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from nxcc.backend.neff import NeffError, NeffFile, read_neff
from nxcc.backend.neff.artifact import Neff
from nxcc.backend.runtime.checked_neff import check_manifest
from nxcc.backend.runtime.collective_binding import Binder
from nxcc.backend.runtime.collective_groups import GroupRegistry, check_rank_count
from nxcc.backend.runtime.compatibility import check_architecture, check_lnc
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import CoreAllocation, allocate, format_cores, resolve_lnc
from nxcc.backend.runtime.handle import ModelHandle
from nxcc.backend.runtime.load_plan import (
    Cores,
    GroupMember,
    SpmdRun,
    job_ranks_plan,
    model_plan,
    ranks_plan,
)
from nxcc.backend.runtime.log import configure_logging, logger, warn_deprecated
from nxcc.backend.runtime.model import TensorInfo
from nxcc.backend.runtime.placement import AUTO, Placer
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance, choose_instance

__all__ = ["GroupMember", "NeffSource", "Runtime", "SpmdRun"]

NeffSource = str | os.PathLike[str] | bytes | NeffFile | Neff
#: libnrt's NRT_ASYNC_EXEC_STATUS_CALLBACK: (params, model_id, vnc, job_id, status) -> None.
AsyncExecCallback = Callable[[Any, int, int, int, NrtStatus], None]


def log_async_status(params: Any, model_id: int, vnc: int, job_id: int,
                     status: NrtStatus) -> None:
    """The default asynchronous-execution callback: one NRT log line with the status."""
    status = NrtStatus.of(status)
    line = "async execution %d of model %d on nc%d completed: %s (%d)"
    level = logger("NRT").info if status == NrtStatus.SUCCESS else logger("NRT").error
    level(line, job_id, model_id, vnc, status.name, int(status))


def check_callback(callback: object) -> None:
    """NrtError(INVALID) unless `callback` is None or callable."""
    if callback is not None and not callable(callback):
        raise NrtError(NrtStatus.INVALID, f"the async exec callback {callback!r} is not "
                       "callable")


def read_source(neff: NeffSource, validate_hash: bool) -> NeffFile:
    """The NEFF read (a path, bytes, a `Neff`; a NeffFile as it is), its payload hash
    checked when `validate_hash` and its manifest validated (`validate.check_manifest`)
    before anything looks at it; NeffError otherwise."""
    if isinstance(neff, Neff):
        neff = neff.data if neff.data is not None else neff.path  # type: ignore[assignment]
    if isinstance(neff, NeffFile):
        if validate_hash and not neff.hash_ok:
            raise NeffError(str(neff.path), "payload hash mismatch (NEURON_RT_VALIDATE_HASH=TRUE)")
    elif isinstance(neff, bytes | bytearray | memoryview):
        with tempfile.TemporaryDirectory(prefix="nxcc-load-") as tmp:
            path = Path(tmp) / "model.neff"
            path.write_bytes(bytes(neff))
            try:
                neff = read_neff(path, validate_hash=validate_hash)
            except NeffError as exc:  # named as the caller knows it, not by the copy
                raise NeffError("<memory>", exc.problem, exc.code) from None
    else:
        neff = read_neff(neff, validate_hash=validate_hash)  # type: ignore[arg-type]
    check_manifest(neff)
    return neff


class Runtime:
    """One process's runtime: its configuration, cores, loaded models and async queue."""

    def __init__(self, config: RuntimeConfig | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        """`config` wins; else the configuration is read from `env` (default os.environ) at
        `init`."""
        self._given = config
        self._env = env
        self._state = "new"
        self._lock = threading.RLock()
        self.config: RuntimeConfig | None = None
        self.instance: Instance | None = None
        self.lnc = 0
        self.allocation: CoreAllocation | None = None
        self.placer: Placer | None = None
        self.models: dict[int, ModelHandle] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._inflight: threading.BoundedSemaphore | None = None
        self._callback: tuple[AsyncExecCallback, Any] = (log_async_status, None)
        self._jobs = itertools.count(1)

    # lifecycle

    def init(self, target: str | None = None) -> Runtime:
        """Validate the environment, set up logging and reserve this process's cores."""
        with self._lock:
            if self._state != "new":
                raise NrtError(NrtStatus.INVALID, f"the runtime is already {self._state}")
            config = self._given or RuntimeConfig.from_env(self._env)
            instance = choose_instance(config.instance_type, target)
            lnc = resolve_lnc(instance, config.logical_nc_config)
            configure_logging(config)
            warn_deprecated(config)
            for name in config.unknown_variables:
                logger("NRT").info("%s is not a variable this runtime knows; ignored", name)
            self.allocation = allocate(config, instance, lnc)
            self.config, self.instance, self.lnc = config, instance, lnc
            self.placer = Placer(self.allocation.cores, self.allocation.describe())
            if config.async_max_inflight > 0:
                self._inflight = threading.BoundedSemaphore(config.async_max_inflight)
                workers = max(1, min(config.async_max_inflight, len(self.allocation.cores), 64))
                self._pool = ThreadPoolExecutor(workers, thread_name_prefix="nrt-async")
            self._state = "initialized"
        logger("NMGR").info("reserved %s for pid %d", self.allocation.describe(), os.getpid())
        return self

    def close(self) -> None:
        """Unload every model, stop the async queue and give the cores back. Idempotent."""
        with self._lock:
            if self._state != "initialized":
                self._state = "closed"
                return
            self._state = "closed"
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for handle in list(self.models.values()):
            self._drop(handle)
        if self.allocation is not None:
            self.allocation.release()
        logger("NRT").info("closed; released %s", self.allocation and
                           format_cores(self.allocation.cores))

    def __enter__(self) -> Runtime:
        if self._state == "new":
            self.init()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def cores(self) -> tuple[int, ...]:
        """The global logical NeuronCores this process owns."""
        self._check_ready()
        assert self.allocation is not None
        return self.allocation.cores

    # models

    def load(self, neff: NeffSource, start_nc: int = AUTO, nc_count: int = AUTO, *,
             spmd: SpmdRun | None = None, member: GroupMember | None = None) -> ModelHandle:
        """Load `neff` (path, bytes, a Neff or a read NeffFile) onto this process's cores: the one
        load path, whatever the NEFF holds.

        - A model (one core, or the programs of an `-lnc 2` NEFF filling a logical core):
          `start_nc` and `nc_count` are relative to this process's cores, -1 meaning the
          placement context's value, else automatic; an nc_count that is a multiple of what
          the model needs replicates it.
        - An SPMD program (`spmd`): its ranks, one NeuronCore each, from `start_nc` (-1:
          the least used aligned group of the topology) or, for a multi-process job, on the
          cores the job placed them (`SpmdRun`). `execute` then takes and returns global
          tensors.
        - `member`: the model then joins a collective group across the host's processes
          (`collective_groups`); it is loaded once (no replicas)."""
        self._check_ready()
        assert self.config is not None and self.instance is not None and self.placer
        if spmd is not None and spmd.world_size < 1:
            raise NrtError(NrtStatus.INVALID, f"world size {spmd.world_size}: give at least "
                           "1 rank")
        neff_file = self._read(neff)
        check_architecture(neff_file, self.instance, self.config.allow_legacy_neff)
        check_lnc(neff_file, self.instance, self.lnc, self.config.logical_nc_config is not None)
        at = Cores(self.instance, self.lnc, self.cores)
        if spmd is None:
            plan = model_plan(neff_file, self.config, at, start_nc, nc_count)
        elif spmd.local_ranks is None:
            check_rank_count(self.instance, self.lnc, spmd.world_size)
            start = self._group_start(spmd.world_size) if start_nc == AUTO else start_nc
            plan = ranks_plan(neff_file, spmd, at, start)
        else:
            plan = job_ranks_plan(neff_file, spmd, at)
        starts = self.placer.place(plan.count, plan.request)
        try:
            handle = plan.build(starts)
        except NeffError as exc:
            self.placer.release(starts, plan.count)
            raise NrtError(NrtStatus.INVALID, str(exc)) from exc
        except BaseException:
            self.placer.release(starts, plan.count)
            raise
        with self._lock:
            self.models[handle.id] = handle
        logger("NRT").info("%s", plan.loaded(handle))
        for binding in handle.bindings:
            logger("KMGR").info("'%s': %s", handle.name, binding.describe())
        if member is not None:
            self._join(handle, member)
        return handle

    def load_collectives(self, neff: NeffSource, start_nc: int = AUTO, nc_count: int = AUTO,
                         *, rank: int, world_size: int, group: str = "default"
                         ) -> ModelHandle:
        """`load(neff, start_nc, nc_count, member=GroupMember(rank, world_size, group))`."""
        return self.load(neff, start_nc, nc_count,
                         member=GroupMember(rank, world_size, group))

    def load_spmd(self, neff: NeffSource, world_size: int,
                  output_shardings: Sequence[str] | None = None, start_nc: int = AUTO
                  ) -> ModelHandle:
        """`load(neff, start_nc, spmd=SpmdRun(world_size, output_shardings))`: the SPMD
        program as `world_size` ranks in this process."""
        return self.load(neff, start_nc, spmd=SpmdRun(world_size, output_shardings))

    def load_spmd_ranks(self, neff: NeffSource, world_size: int, local_ranks: Sequence[int],
                        global_cores: Sequence[int],
                        communicator: Callable[[int, Binder], Any],
                        output_shardings: Sequence[str] | None = None,
                        instances: Sequence[int] = ()) -> ModelHandle:
        """`load(neff, spmd=SpmdRun(...))` for this process's ranks of a multi-process job
        (see `SpmdRun`)."""
        return self.load(neff, spmd=SpmdRun(world_size, output_shardings, tuple(local_ranks),
                                            tuple(global_cores), tuple(instances),
                                            communicator))

    def tensor_info(self, model: ModelHandle) -> tuple[list[TensorInfo], list[TensorInfo]]:
        """(inputs, outputs) of a loaded model: name, dtype and shape of each."""
        self._check_model(model)
        return list(model.inputs), list(model.outputs)

    def execute(self, model: ModelHandle, inputs: Mapping[str, np.ndarray]
                ) -> dict[str, np.ndarray]:
        """Run `model` once (on its next replica); its outputs by name."""
        self._check_model(model)
        assert self.config is not None
        return model.execute(inputs, self.config.exec_timeout)

    def execute_async(self, model: ModelHandle, inputs: Mapping[str, np.ndarray]
                      ) -> Future[dict[str, np.ndarray]]:
        """Queue an execution; at most NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS at once
        (queued or running), beyond that NrtError(QUEUE_FULL); 0 disables it (INVALID).
        Keep `inputs` unchanged until the future is done."""
        self._check_model(model)
        assert self.config is not None
        limit = self.config.async_max_inflight
        if self._pool is None or self._inflight is None:
            raise NrtError(NrtStatus.INVALID, "asynchronous execution is disabled: "
                           "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS is 0 (the default); set "
                           "it to the number of requests to keep in flight, e.g. 3")
        if not self._inflight.acquire(blocking=False):
            raise NrtError(NrtStatus.QUEUE_FULL, f"{limit} asynchronous execution(s) already in "
                           f"flight (NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS={limit}); wait "
                           "for one to complete")
        semaphore, job_id = self._inflight, next(self._jobs)
        timeout = self.config.exec_timeout

        def job() -> dict[str, np.ndarray]:
            where: list[int] = []
            status = NrtStatus.FAILURE
            try:
                self._check_model(model)
                outputs = model.execute(inputs, timeout, where)
                status = NrtStatus.SUCCESS
                return outputs
            except NrtError as exc:
                status = exc.status
                raise
            finally:
                semaphore.release()
                self._post_status(model, where[0] if where else model.cores[0], job_id,
                                  status)

        try:
            return self._pool.submit(job)
        except RuntimeError:
            semaphore.release()
            raise NrtError(NrtStatus.CLOSED, "the runtime is closing") from None

    def register_async_exec_callback(self, callback: AsyncExecCallback | None,
                                     params: Any = None) -> None:
        """libnrt's `nrt_register_async_exec_callback`: `callback(params, model_id, vnc,
        job_id, status)` is called on the execution thread as each asynchronous execution
        completes; a later registration replaces it; None restores the default, which logs
        the status (see the module docstring)."""
        check_callback(callback)
        with self._lock:
            self._callback = (callback, params) if callback is not None else \
                (log_async_status, None)

    nrt_register_async_exec_callback = register_async_exec_callback

    def _post_status(self, model: ModelHandle, vnc: int, job_id: int,
                     status: NrtStatus) -> None:
        """Hand one completion to the registered callback; its own failure is logged."""
        with self._lock:
            callback, params = self._callback
        try:
            callback(params, model.id, vnc, job_id, status)
        except Exception as exc:  # noqa: BLE001 - the execution's outcome stands
            logger("NRT").error("the async exec callback failed on execution %d of model "
                                "%d: %s", job_id, model.id, exc)

    def unload(self, model: ModelHandle) -> None:
        """Unload `model`, freeing its cores for later loads; INVALID_HANDLE if not loaded."""
        self._check_model(model)
        self._drop(model)
        logger("NRT").info("unloaded '%s'", model.name)

    # internals

    def _group_start(self, n: int) -> int:
        """The least used start (relative) of `n` of this process's cores that form a
        collective group of the topology (consecutive, aligned to `n`), else AUTO."""
        assert self.allocation is not None and self.placer is not None
        owned, usage = self.allocation.cores, self.placer.usage
        fits = [s for s in range(len(owned) - n + 1)
                if owned[s] % n == 0 and list(owned[s:s + n]) == list(range(owned[s],
                                                                            owned[s] + n))]
        if not fits:
            return AUTO
        return min(fits, key=lambda s: (max(usage[s:s + n]), sum(usage[s:s + n]), s))

    def _drop(self, handle: ModelHandle) -> None:
        with self._lock:
            if self.models.pop(handle.id, None) is None:
                return
            handle.loaded = False
        if self.placer is not None:
            self.placer.release(handle.starts, handle.needed)
        if handle.membership is not None:
            handle.membership.leave()

    def _join(self, handle: ModelHandle, member: GroupMember) -> None:
        """`handle` joins rank `member.rank` of `member.world_size` in collective group
        `member.group` (across the host's processes): the count and placement must suit the
        topology and every rank must have loaded the same collectives (see
        collective_groups). The model is unloaded if it cannot join."""
        assert self.config is not None and self.instance is not None
        try:
            if len(handle.replicas) != 1:
                raise NrtError(NrtStatus.INVALID, "a rank of a collective group is loaded "
                               "once; do not replicate it (nc_count = what the model needs)")
            registry = GroupRegistry(self.config.runtime_dir, self.instance, self.lnc)
            handle.membership = registry.join(member.group, member.rank, member.world_size,
                                              handle.cores[0], handle.manifest)
        except BaseException:
            self.unload(handle)
            raise
        logger("NMGR").info("rank %d/%d of group '%s' on nc%d", member.rank, member.world_size,
                            member.group, handle.cores[0])

    def _read(self, neff: NeffSource) -> NeffFile:
        """`read_source` with this runtime's hash setting; NrtError(INVALID) when the NEFF
        cannot be used (keeping the NEFF error's code)."""
        assert self.config is not None
        try:
            return read_source(neff, self.config.validate_hash)
        except NeffError as exc:
            logger("NRT").error("failed to load NEFF: %s", exc)
            raise NrtError(NrtStatus.INVALID, str(exc)) from exc

    def _check_ready(self) -> None:
        if self._state == "new":
            raise NrtError(NrtStatus.UNINITIALIZED, "the runtime is not initialized; call "
                           "init() first")
        if self._state == "closed":
            raise NrtError(NrtStatus.CLOSED, "the runtime is closed")

    def _check_model(self, model: ModelHandle) -> None:
        self._check_ready()
        if not isinstance(model, ModelHandle) or self.models.get(model.id) is not model:
            raise NrtError(NrtStatus.INVALID_HANDLE, f"{model!r} is not a model loaded by "
                           "this runtime (unloaded?)")
