"""The runtime's API, shaped like libnrt (`nrt_init`, `nrt_load`, `nrt_execute`, ...).

    rt = Runtime()                      # reads nothing yet
    rt.init(target="trn1")              # env validated, logging set, cores reserved
    m = rt.load("model.neff")           # start_nc=-1, nc_count=-1: automatic placement
    w = rt.load_spmd("spmd.neff", 8)    # an SPMD program as 8 ranks (global in, global out)
    m.bindings                          # how its collectives were bound (collective_binding)
    out = rt.execute(m, {"x": x})       # dict of outputs
    fut = rt.execute_async(m, {"x": x}) # concurrent.futures.Future (needs
                                        # NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0)
    rt.unload(m); rt.close()            # or: with Runtime() as rt: ...

Every failure raises `NrtError` with the libnrt status: INVALID (bad configuration, LNC
mismatch, bad placement arguments, malformed NEFF), LOAD_NOT_ENOUGH_NC (cores held by another
process or not owned by this one), UNSUPPORTED_NEFF_VERSION (architecture), TIMEOUT,
QUEUE_FULL, EXEC_BAD_INPUT, INVALID_HANDLE (unloaded model), UNINITIALIZED, CLOSED.

`init(target)`: the instance simulated is NXCC_INSTANCE_TYPE, else the default instance of
`target` (a NEFF's target family), else trn1.32xlarge (`topology.choose_instance`).
"""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from nxcc.backend.neff import NeffError, NeffFile, read_neff
from nxcc.backend.runtime.checked_neff import check_manifest
from nxcc.backend.runtime.collective_binding import Binder, Placement
from nxcc.backend.runtime.collective_groups import GroupRegistry, check_rank_count, check_rank_set
from nxcc.backend.runtime.compatibility import check_architecture, check_lnc, needed_cores
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import CoreAllocation, allocate, format_cores, resolve_lnc
from nxcc.backend.runtime.handle import ModelHandle, Replica
from nxcc.backend.runtime.log import configure_logging, logger
from nxcc.backend.runtime.model import LoadedModel, TensorInfo, read_weights
from nxcc.backend.runtime.placement import AUTO, PlacementRequest, Placer, current_request
from nxcc.backend.runtime.spmd import SpmdModel
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance, choose_instance

NeffSource = str | os.PathLike[str] | bytes | NeffFile


def program_placement(instance: Instance, lnc: int, cores: tuple[int, ...], programs: int
                      ) -> Placement:
    """Program i of a model on the logical `cores` runs on physical core i % lnc of logical
    core cores[i // lnc] (the programs of an -lnc 2 NEFF fill one logical core)."""
    physical = tuple(instance.physical_of(cores[min(i // lnc, len(cores) - 1)], lnc)[i % lnc]
                     for i in range(programs))
    return Placement(instance, lnc, physical)


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

    def load(self, neff: NeffSource, start_nc: int = AUTO, nc_count: int = AUTO
             ) -> ModelHandle:
        """Load `neff` (path, bytes or a read NeffFile) onto cores: `start_nc` and `nc_count`
        are relative to this process's cores, -1 meaning the placement context's value, else
        automatic; an nc_count that is a multiple of what the model needs replicates it."""
        self._check_ready()
        assert self.config is not None and self.instance is not None and self.placer
        neff_file = self._read(neff)
        check_architecture(neff_file, self.instance, self.config.allow_legacy_neff)
        check_lnc(neff_file, self.instance, self.lnc, self.config.logical_nc_config is not None)
        needed = needed_cores(neff_file)
        context = current_request()
        request = PlacementRequest(start_nc if start_nc != AUTO else context.start_nc,
                                   nc_count if nc_count != AUTO else context.nc_count,
                                   context.multicore and start_nc == AUTO and nc_count == AUTO)
        starts = self.placer.place(needed, request)
        try:
            handle = self._build(neff_file, needed, starts)
        except NeffError as exc:
            self.placer.release(starts, needed)
            raise NrtError(NrtStatus.INVALID, str(exc)) from exc
        except BaseException:
            self.placer.release(starts, needed)
            raise
        with self._lock:
            self.models[handle.id] = handle
        logger("NRT").info("loaded '%s' on %s%s", handle.name, format_cores(handle.cores),
                           " (shared weights)" if self.config.shared_weights else "")
        return handle

    def load_collectives(self, neff: NeffSource, start_nc: int = AUTO, nc_count: int = AUTO,
                         *, rank: int, world_size: int, group: str = "default"
                         ) -> ModelHandle:
        """`load`, then join rank `rank` of `world_size` in collective group `group` (across
        the host's processes): the count and placement must suit the topology and every
        rank must have loaded the same collectives (see collective_groups)."""
        handle = self.load(neff, start_nc, nc_count)
        assert self.config is not None and self.instance is not None
        try:
            if len(handle.replicas) != 1:
                raise NrtError(NrtStatus.INVALID, "a rank of a collective group is loaded "
                               "once; do not replicate it (nc_count = what the model needs)")
            registry = GroupRegistry(self.config.runtime_dir, self.instance, self.lnc)
            handle.membership = registry.join(group, rank, world_size, handle.cores[0],
                                              handle.manifest)
        except BaseException:
            self.unload(handle)
            raise
        logger("NMGR").info("rank %d/%d of group '%s' on nc%d", rank, world_size, group,
                            handle.cores[0])
        return handle

    def load_spmd(self, neff: NeffSource, world_size: int,
                  output_shardings: Sequence[str] | None = None, start_nc: int = AUTO
                  ) -> ModelHandle:
        """Load the SPMD program `neff` (one program, compiled at -lnc 1) as `world_size`
        ranks in this process, one per NeuronCore from `start_nc` (relative; -1: automatic).
        The count must suit the instance topology (`collective_groups`) and, when the
        program says, the world it was partitioned for. `output_shardings` (HLO sharding
        text, once per output) says how to assemble outputs the program gives no sharding
        for. `execute` then takes and returns global tensors (`spmd.SpmdModel`)."""
        self._check_ready()
        assert self.config is not None and self.instance is not None and self.placer
        if world_size < 1:
            raise NrtError(NrtStatus.INVALID, f"world size {world_size}: give at least 1 rank")
        neff_file = self._read(neff)
        check_architecture(neff_file, self.instance, self.config.allow_legacy_neff)
        check_lnc(neff_file, self.instance, self.lnc, self.config.logical_nc_config is not None)
        check_rank_count(self.instance, self.lnc, world_size)
        if start_nc == AUTO:
            start_nc = self._group_start(world_size)
        starts = self.placer.place(world_size, PlacementRequest(start_nc, world_size))
        try:
            cores = tuple(self.allocation.cores[starts[0]:starts[0] + world_size])  # type: ignore[union-attr]
            check_rank_set(self.instance, self.lnc, cores)
            replica = Replica(cores, self.instance.device_of(cores[0], self.lnc))
            placement = Placement(self.instance, self.lnc,
                                  tuple(self.instance.physical_of(c, self.lnc)[0] for c in cores))
            replica.model = SpmdModel(neff_file, world_size, placement, output_shardings,
                                      should_stop=replica.expired)
            name = neff_file.header.name or neff_file.path.name
            handle = ModelHandle(name, neff_file.path, neff_file.manifest, world_size, starts,
                                 [replica])
        except NeffError as exc:
            self.placer.release(starts, world_size)
            raise NrtError(NrtStatus.INVALID, str(exc)) from exc
        except BaseException:
            self.placer.release(starts, world_size)
            raise
        with self._lock:
            self.models[handle.id] = handle
        logger("NRT").info("loaded SPMD '%s' as %d ranks on %s", handle.name, world_size,
                           format_cores(cores))
        return handle

    def load_spmd_ranks(self, neff: NeffSource, world_size: int, local_ranks: Sequence[int],
                        global_cores: Sequence[int],
                        communicator: Callable[[int, Binder], Any],
                        output_shardings: Sequence[str] | None = None,
                        instances: Sequence[int] = ()) -> ModelHandle:
        """Load this process's ranks (`local_ranks`, one per core of this process's, in order)
        of the SPMD program `neff` run as `world_size` ranks by several processes:
        `global_cores[r]` is rank r's global logical core (the job's placement, the same in
        every process) and `instances[r]` the simulated instance it is on (empty: one),
        `communicator(world_size, binder)` how the ranks reach each other. Each instance's
        rank set must suit its topology. The handle's model runs only the local ranks
        (`SpmdModel.execute_local`)."""
        self._check_ready()
        assert self.config is not None and self.instance is not None and self.placer
        neff_file = self._read(neff)
        check_architecture(neff_file, self.instance, self.config.allow_legacy_neff)
        check_lnc(neff_file, self.instance, self.lnc, self.config.logical_nc_config is not None)
        for index in sorted(set(instances)) or [0]:
            check_rank_set(self.instance, self.lnc, tuple(
                c for r, c in enumerate(global_cores) if not instances or instances[r] == index))
        n = len(local_ranks)
        starts = self.placer.place(n, PlacementRequest(0, n))
        try:
            mine = tuple(self.allocation.cores[starts[0]:starts[0] + n])  # type: ignore[union-attr]
            if mine != tuple(global_cores[r] for r in local_ranks):
                raise NrtError(NrtStatus.INVALID, f"this process holds NeuronCores "
                               f"{format_cores(mine)}, but the job places its ranks "
                               f"{list(local_ranks)} on {[global_cores[r] for r in local_ranks]}")
            replica = Replica(mine, self.instance.device_of(mine[0], self.lnc))
            placement = Placement(self.instance, self.lnc, tuple(
                self.instance.physical_of(c, self.lnc)[0] for c in global_cores),
                tuple(instances))
            replica.model = SpmdModel(neff_file, world_size, placement, output_shardings,
                                      should_stop=replica.expired, local_ranks=local_ranks,
                                      communicator=communicator)
            name = neff_file.header.name or neff_file.path.name
            handle = ModelHandle(name, neff_file.path, neff_file.manifest, n, starts, [replica])
        except NeffError as exc:
            self.placer.release(starts, n)
            raise NrtError(NrtStatus.INVALID, str(exc)) from exc
        except BaseException:
            self.placer.release(starts, n)
            raise
        with self._lock:
            self.models[handle.id] = handle
        logger("NRT").info("loaded ranks %s of SPMD '%s' (%d ranks) on %s", list(local_ranks),
                           handle.name, world_size, format_cores(mine))
        return handle

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
        semaphore = self._inflight

        def job() -> dict[str, np.ndarray]:
            try:
                return self.execute(model, inputs)
            finally:
                semaphore.release()

        try:
            return self._pool.submit(job)
        except RuntimeError:
            semaphore.release()
            raise NrtError(NrtStatus.CLOSED, "the runtime is closing") from None

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

    def _build(self, neff: NeffFile, needed: int, starts: list[int]) -> ModelHandle:
        assert self.config is not None and self.instance is not None
        assert self.allocation is not None
        owned = self.allocation.cores
        shared = read_weights(neff) if self.config.shared_weights else None
        replicas = []
        programs = max(1, len(neff.manifest.get("subgraphs", [])))
        for s in starts:
            cores = tuple(owned[s:s + needed])
            replica = Replica(cores, self.instance.device_of(cores[0], self.lnc))
            placement = program_placement(self.instance, self.lnc, cores, programs)
            replica.model = LoadedModel(neff, weights=shared, should_stop=replica.expired,
                                        placement=placement)
            replicas.append(replica)
        name = neff.header.name or neff.path.name
        return ModelHandle(name, neff.path, neff.manifest, needed, starts, replicas)

    def _read(self, neff: NeffSource) -> NeffFile:
        """The NEFF read, its hash checked when configured and its manifest validated
        (`validate.check_manifest`) before anything looks at it."""
        assert self.config is not None
        if isinstance(neff, NeffFile):
            if self.config.validate_hash and not neff.hash_ok:
                raise NrtError(NrtStatus.INVALID, f"{neff.path}: payload hash mismatch "
                               "(NEURON_RT_VALIDATE_HASH=TRUE)")
        try:
            if isinstance(neff, bytes | bytearray | memoryview):
                with tempfile.TemporaryDirectory(prefix="nxcc-load-") as tmp:
                    path = Path(tmp) / "model.neff"
                    path.write_bytes(bytes(neff))
                    neff = read_neff(path, validate_hash=self.config.validate_hash)
            elif not isinstance(neff, NeffFile):
                neff = read_neff(neff, validate_hash=self.config.validate_hash)
            check_manifest(neff)
            return neff
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
