"""What a load of a NEFF places and builds, for each kind of NEFF: `Runtime.load` is the one
load path, and asks one of these plans where the model goes and how it is made.

- `model_plan`: a model on the logical cores it needs (one, or the programs of an `-lnc 2`
  NEFF filling a logical core), replicated when `nc_count` is a multiple of that;
- `ranks_plan`: an SPMD program as `world_size` ranks of this process, one core each;
- `job_ranks_plan`: this process's ranks of an SPMD program several processes run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nxcc.backend.neff import NeffFile
from nxcc.backend.runtime.collective_binding import Binder, Placement
from nxcc.backend.runtime.collective_groups import check_rank_set
from nxcc.backend.runtime.compatibility import needed_cores
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import format_cores
from nxcc.backend.runtime.handle import ModelHandle, Replica
from nxcc.backend.runtime.model import LoadedModel
from nxcc.backend.runtime.placement import AUTO, PlacementRequest, current_request
from nxcc.backend.runtime.shared_weights import SHARED_WEIGHTS
from nxcc.backend.runtime.spmd import SpmdModel
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance


@dataclass(frozen=True)
class SpmdRun:
    """How an SPMD program (one program, compiled at -lnc 1) runs: as `world_size` ranks,
    one NeuronCore each. `output_shardings` (HLO sharding text, once per output) says how
    to assemble the outputs the program gives no sharding for.

    In one process (the default) every rank is local. A multi-process job gives this
    process's `local_ranks`, every rank's global logical core (`global_cores`, the same in
    every process) and simulated instance (`instances`; empty: one), and
    `communicator(world_size, binder)`, how the ranks reach each other; the model then runs
    only the local ranks (`SpmdModel.execute_local`)."""

    world_size: int
    output_shardings: Sequence[str] | None = None
    local_ranks: tuple[int, ...] | None = None
    global_cores: tuple[int, ...] = ()
    instances: tuple[int, ...] = ()
    communicator: Callable[[int, Binder], Any] | None = None


@dataclass(frozen=True)
class GroupMember:
    """Rank `rank` of `world_size` in the host's collective group `group`."""

    rank: int
    world_size: int
    group: str = "default"


@dataclass(frozen=True)
class Cores:
    """Where a process's models go: its instance, LNC and logical cores (global indices)."""

    instance: Instance
    lnc: int
    owned: tuple[int, ...]


@dataclass(frozen=True)
class LoadPlan:
    """`count` cores placed as `request` asks; `build(starts)` makes the handle on them;
    `loaded(handle)` is the log line saying what was loaded."""

    count: int
    request: PlacementRequest
    build: Callable[[list[int]], ModelHandle]
    loaded: Callable[[ModelHandle], str]


def program_placement(instance: Instance, lnc: int, cores: tuple[int, ...], programs: int
                      ) -> Placement:
    """Program i of a model on the logical `cores` runs on physical core i % lnc of logical
    core cores[i // lnc] (the programs of an -lnc 2 NEFF fill one logical core)."""
    physical = tuple(instance.physical_of(cores[min(i // lnc, len(cores) - 1)], lnc)[i % lnc]
                     for i in range(programs))
    return Placement(instance, lnc, physical)


def model_plan(neff: NeffFile, config: RuntimeConfig, at: Cores, start_nc: int,
               nc_count: int) -> LoadPlan:
    """A model on the logical cores it needs; `start_nc` and `nc_count` relative to the
    process's cores, AUTO meaning the placement context's value, else automatic. With
    NEURON_RT_MULTI_INSTANCE_SHARED_WEIGHTS its replicas, and every other load of the same
    NEFF in the process, read one copy of the weights (`shared_weights`)."""
    needed = needed_cores(neff)
    context = current_request()
    request = PlacementRequest(start_nc if start_nc != AUTO else context.start_nc,
                               nc_count if nc_count != AUTO else context.nc_count,
                               context.multicore and start_nc == AUTO and nc_count == AUTO)

    def build(starts: list[int]) -> ModelHandle:
        shared = SHARED_WEIGHTS.of(neff) if config.shared_weights else None
        replicas = []
        programs = max(1, len(neff.manifest.get("subgraphs", [])))
        for s in starts:
            cores = at.owned[s:s + needed]
            replica = Replica(cores, at.instance.device_of(cores[0], at.lnc))
            placement = program_placement(at.instance, at.lnc, cores, programs)
            replica.model = LoadedModel(neff, weights=shared, should_stop=replica.expired,
                                        placement=placement)
            replicas.append(replica)
        return ModelHandle(_name(neff), neff.path, neff.manifest, needed, starts, replicas)

    def loaded(handle: ModelHandle) -> str:
        shared = " (shared weights)" if config.shared_weights else ""
        return f"loaded '{handle.name}' on {format_cores(handle.cores)}{shared}"

    return LoadPlan(needed, request, build, loaded)


def ranks_plan(neff: NeffFile, spmd: SpmdRun, at: Cores, start_nc: int) -> LoadPlan:
    """An SPMD program's ranks in this process, one core each, from `start_nc` (relative);
    the set of cores must suit the instance topology."""
    n = spmd.world_size

    def build(starts: list[int]) -> ModelHandle:
        cores = at.owned[starts[0]:starts[0] + n]
        check_rank_set(at.instance, at.lnc, cores)
        replica = Replica(cores, at.instance.device_of(cores[0], at.lnc))
        placement = Placement(at.instance, at.lnc,
                              tuple(at.instance.physical_of(c, at.lnc)[0] for c in cores))
        replica.model = SpmdModel(neff, n, placement, spmd.output_shardings,
                                  should_stop=replica.expired)
        return ModelHandle(_name(neff), neff.path, neff.manifest, n, starts, [replica])

    def loaded(handle: ModelHandle) -> str:
        return (f"loaded SPMD '{handle.name}' as {n} ranks on "
                f"{format_cores(handle.replicas[0].cores)}")

    return LoadPlan(n, PlacementRequest(start_nc, n), build, loaded)


def job_ranks_plan(neff: NeffFile, spmd: SpmdRun, at: Cores) -> LoadPlan:
    """This process's ranks (`spmd.local_ranks`, one per core of this process's, in order)
    of an SPMD program that several processes run; each instance's rank set must suit its
    topology, and this process must hold the cores the job placed its ranks on."""
    assert spmd.local_ranks is not None
    local, cores, instances = spmd.local_ranks, spmd.global_cores, spmd.instances
    for index in sorted(set(instances)) or [0]:
        check_rank_set(at.instance, at.lnc, tuple(
            c for r, c in enumerate(cores) if not instances or instances[r] == index))
    n = len(local)

    def build(starts: list[int]) -> ModelHandle:
        mine = at.owned[starts[0]:starts[0] + n]
        if mine != tuple(cores[r] for r in local):
            raise NrtError(NrtStatus.INVALID, f"this process holds NeuronCores "
                           f"{format_cores(mine)}, but the job places its ranks "
                           f"{list(local)} on {[cores[r] for r in local]}")
        replica = Replica(mine, at.instance.device_of(mine[0], at.lnc))
        placement = Placement(at.instance, at.lnc, tuple(
            at.instance.physical_of(c, at.lnc)[0] for c in cores), tuple(instances))
        replica.model = SpmdModel(neff, spmd.world_size, placement, spmd.output_shardings,
                                  should_stop=replica.expired, local_ranks=local,
                                  communicator=spmd.communicator)
        return ModelHandle(_name(neff), neff.path, neff.manifest, n, starts, [replica])

    def loaded(handle: ModelHandle) -> str:
        return (f"loaded ranks {list(local)} of SPMD '{handle.name}' ({spmd.world_size} "
                f"ranks) on {format_cores(handle.replicas[0].cores)}")

    return LoadPlan(n, PlacementRequest(0, n), build, loaded)


def _name(neff: NeffFile) -> str:
    return neff.header.name or neff.path.name
