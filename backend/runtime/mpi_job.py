"""An SPMD NEFF run by the processes of one MPI job (`mpiexec -n P neuronx-cc run ...`).

The job has `world_size` ranks (default: one per process) spread over the P processes in
blocks: process p runs ranks p*L .. p*L+L-1 (L = world_size / P) on threads, as
`--world-size` does in one process. Each process

1. claims its own NeuronCores through the ordinary allocation rules: `NEURON_RT_VISIBLE_CORES`
   / `NEURON_RT_NUM_CORES` when set for it, else exactly the block of L cores its process
   number selects (never all of them, which would refuse every other process);
   With `NXCC_RANKS_PER_INSTANCE=N` the job is laid out as world_size / N simulated
   instances of `NXCC_INSTANCE_TYPE` (ranks r*N .. r*N+N-1 on instance r, each with its own
   cores), joined by EFA; each instance's rank set must suit its topology, and an instance
   type without EFA (trn1.2xlarge) cannot be joined to another;
2. learns every process's cores (an MPI all-gather), so all processes bind the collectives to
   the same placement, and checks that they loaded the same collectives (a handshake that
   names the first difference);
3. runs its ranks on their blocks of the global inputs, exchanging data with the other
   processes' ranks over MPI (`channels.MpiChannels`, `channel_comm`); a lost rank ends every
   waiting rank after `NEURON_RT_EXEC_TIMEOUT` seconds with an error naming it;
4. sends its ranks' outputs to process 0, which assembles the global outputs.

A failure in any process at any step is made known to every process before the next step
(an all-gather of the outcome), so all exit with the error instead of waiting for each other.
mpi4py (with the mpich wheel, `pip install 'nxcc[mpi]'`) is needed only here.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import numpy as np

from nxcc.backend.neff import NeffFile
from nxcc.backend.runtime.channel_comm import ChannelCommunicator
from nxcc.backend.runtime.channels import MpiChannels, RankLost
from nxcc.backend.runtime.collective_binding import Binder
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.handle import ModelHandle
from nxcc.backend.runtime.load_plan import SpmdRun
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.peer_liveness import PeerProcesses, this_process
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import choose_instance

#: (size, rank) variables set by the MPI launchers we know (MPICH/Hydra, Open MPI, MVAPICH).
LAUNCHER_VARIABLES = (("PMI_SIZE", "PMI_RANK"), ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"),
                      ("MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_RANK"))
INSTALL_HINT = "pip install 'nxcc[mpi]' (mpi4py and the mpich wheel)"

T = TypeVar("T")


def launched_processes(env: Mapping[str, str] | None = None) -> int:
    """How many processes the MPI launcher started this job with (1 when not launched)."""
    return max(1, _launcher_value(0, env, 1))


def launched_rank(env: Mapping[str, str] | None = None) -> int:
    """This process's rank in the MPI launcher's job (0 when not launched)."""
    return max(0, _launcher_value(1, env, 0))


def _launcher_value(which: int, env: Mapping[str, str] | None, default: int) -> int:
    """The first launcher's size (`which` 0) or rank (1) variable that is set, as an int."""
    env = os.environ if env is None else env
    for names in LAUNCHER_VARIABLES:
        try:
            return int(env[names[which]])
        except (KeyError, ValueError):
            continue
    return default


def world_communicator() -> Any:
    """MPI's world communicator; NrtError naming what to install when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError:
        raise NrtError(NrtStatus.INVALID, "this process was started by an MPI launcher as one "
                       f"of several processes, but mpi4py is not installed: {INSTALL_HINT}"
                       ) from None
    comm = MPI.COMM_WORLD
    comm.Set_errhandler(MPI.ERRORS_RETURN)  # a lost peer is an exception, not an abort
    return comm


@dataclass(frozen=True)
class JobLayout:
    """Which ranks of a `world_size`-rank job process `process` of `processes` runs."""

    processes: int
    process: int
    world_size: int

    @property
    def per_process(self) -> int:
        return self.world_size // self.processes

    @property
    def local_ranks(self) -> list[int]:
        first = self.process * self.per_process
        return list(range(first, first + self.per_process))


def job_layout(world_size: int | None, processes: int, process: int) -> JobLayout:
    """The layout; NrtError(INVALID) naming both numbers when the ranks do not divide."""
    ranks = world_size or processes
    if ranks % processes:
        raise NrtError(NrtStatus.INVALID, f"--world-size {ranks} cannot be spread over the "
                       f"{processes} processes of this job (mpiexec -n {processes}): give a "
                       f"multiple of {processes}")
    return JobLayout(processes, process, ranks)


def instance_layout(config: RuntimeConfig, layout: JobLayout, target: str | None
                    ) -> tuple[int, int]:
    """(ranks per simulated instance, instances) of the job: `NXCC_RANKS_PER_INSTANCE`
    (default: every rank on one instance). NrtError(INVALID) with the reason when the ranks
    do not divide into instances, a process's ranks would span two, or the instance type
    cannot be joined to others (no EFA)."""
    per = config.ranks_per_instance or layout.world_size
    if layout.world_size % per:
        raise NrtError(NrtStatus.INVALID, f"{layout.world_size} ranks cannot be laid out as "
                       f"instances of {per} ranks (NXCC_RANKS_PER_INSTANCE={per})")
    count = layout.world_size // per
    if per % layout.per_process:
        raise NrtError(NrtStatus.INVALID, f"each process runs {layout.per_process} ranks, "
                       f"which do not fit evenly in instances of {per} ranks "
                       f"(NXCC_RANKS_PER_INSTANCE): a process's ranks are on one instance")
    instance = choose_instance(config.instance_type, target)
    if count > 1 and not instance.efa:
        raise NrtError(NrtStatus.INVALID, f"{count} instances of {instance.name}: EFA is not "
                       f"available on {instance.name}, and the ranks cannot be extended beyond "
                       "a single instance")
    return per, count


def own_cores(config: RuntimeConfig, layout: JobLayout, per_instance: int) -> RuntimeConfig:
    """`config` for this process: its instance, and its block of that instance's cores
    unless the user chose its cores."""
    first = layout.local_ranks[0]
    config = dataclasses.replace(config, instance_index=first // per_instance)
    if config.visible_cores is not None or config.num_cores:
        return config
    start = first % per_instance
    return dataclasses.replace(config, visible_cores=(start, start + layout.per_process - 1))


class MpiJob:
    """One process's side of a multi-process SPMD run (see the module docstring)."""

    def __init__(self, config: RuntimeConfig, world_size: int | None) -> None:
        self.comm = world_communicator()
        self.layout = job_layout(world_size, self.comm.Get_size(), self.comm.Get_rank())
        self.timeout = float(config.exec_timeout or 10 ** 9)
        self.peers = PeerProcesses(self.comm.allgather(this_process()), self.layout.process,
                                   self.layout.per_process, config.runtime_dir)
        # The job's own exchanges (outcomes, outputs) go over channels of a communicator of
        # their own: they poll, so a lost peer ends them within the deadline, never a hang.
        self.control = MpiChannels(self.comm.Dup(), self.layout.processes,
                                   [self.layout.process], self.timeout, self.peers)
        self.given = config
        self.config = config
        self.runtime = Runtime(config=config)
        self.model: ModelHandle | None = None
        self.channels: MpiChannels | None = None

    @property
    def is_root(self) -> bool:
        return self.layout.process == 0

    def agree(self, step: Callable[[], T]) -> T:
        """`step()` in every process; if it failed anywhere, the same error everywhere."""
        try:
            value, error = step(), None
        except NrtError as exc:
            value, error = None, exc
        self.agree_on(error)
        return value  # type: ignore[return-value]

    def agree_on(self, error: BaseException | None) -> None:
        """Tell every process whether this one failed (`error`), and learn the same of them:
        if any failed, raise here too. A process that failed raises its own `error`; the
        others an NrtError naming the first process that failed and its one line."""
        mine = None
        if error is not None:
            if isinstance(error, NrtError):  # its message, without the status str() adds
                mine = (error.status, " ".join(str(error.args[0]).split()))
            else:
                mine = (NrtStatus.INVALID, " ".join(str(error).split()))
        try:
            failures = self.allgather(mine)
        except RankLost as lost:  # this process's own error says more, if it has one
            raise error or NrtError(NrtStatus.FAILURE, str(lost)) from None
        for process, failure in enumerate(failures):
            if failure is not None:
                if error is not None:
                    raise error
                status, message = failure
                raise NrtError(status, f"process {process} of the job failed: {message}")

    def load(self, neff: NeffFile, output_shardings: Sequence[str] | None) -> None:
        """Init the runtime, place every rank, load this process's ranks, check the others
        loaded the same collectives."""
        lay = self.layout
        target = neff.manifest.get("target")
        self.agree(lambda: check_world_size(neff, lay))
        per_instance, _ = self.agree(lambda: instance_layout(self.given, lay, target))
        self.config = own_cores(self.given, lay, per_instance)
        self.runtime = Runtime(config=self.config)
        self.agree(lambda: self.runtime.init(target=target))
        mine = list(self.runtime.cores[:lay.per_process])
        blocks = self.allgather((self.config.instance_index, mine))
        cores = [c for _, block in blocks for c in block]
        instances = [index for index, block in blocks for _ in block]
        timeout = float(self.config.exec_timeout or 10 ** 9)
        self.channels = MpiChannels(self.comm, lay.world_size, lay.local_ranks, timeout,
                                    self.peers)
        channels = self.channels

        def communicator(n: int, binder: Binder) -> ChannelCommunicator:
            return ChannelCommunicator(n, binder, channels)

        run = SpmdRun(lay.world_size, output_shardings, tuple(lay.local_ranks), tuple(cores),
                      tuple(instances) if per_instance < lay.world_size else (), communicator)
        self.model = self.agree(lambda: self.runtime.load(neff, spmd=run))
        self.agree(lambda: check_same_collectives(
            self.allgather(neff.manifest.get("collectives") or [])))

    def execute(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray] | None:
        """Run once; the global outputs in process 0, None elsewhere."""
        assert self.model is not None and self.channels is not None
        spmd = self.model.replicas[0].model
        per_rank = self.agree(lambda: spmd.execute_local(inputs))  # type: ignore[union-attr]
        try:
            self.channels.complete_sends()
            if not self.is_root:
                self.control.send(self.layout.process, 0, per_rank)
                self.control.complete_sends()
                return None
            gathered = [per_rank] + [self.control.recv(p, 0)
                                     for p in range(1, self.layout.processes)]
        except RankLost as lost:
            raise NrtError(NrtStatus.FAILURE, str(lost)) from None
        return spmd.assemble([outs for block in gathered for outs in block])  # type: ignore[union-attr]

    def allgather(self, value: T) -> list[T]:
        """`value` of every process, in process order (RankLost if one is lost)."""
        me, n = self.layout.process, self.layout.processes
        for other in range(n):
            if other != me:
                self.control.send(me, other, value)
        # every process sends a value of the same kind at the same point of the job
        values = [value if p == me else cast(T, self.control.recv(p, me)) for p in range(n)]
        self.control.complete_sends()
        return values

    def close(self) -> None:
        if self.channels is not None:
            self.channels.complete_sends()
        self.runtime.close()

    def abandon(self, cause: str) -> None:
        """Release the cores after a failure (`cause`), without waiting for sends a lost
        peer will never take; leave the note that says why this process goes."""
        self.peers.leaving(cause)
        self.runtime.close()


def check_world_size(neff: NeffFile, layout: JobLayout) -> None:
    """NrtError(INVALID) naming both numbers when the program was partitioned for another
    number of ranks than the job runs."""
    spmd = neff.manifest.get("spmd")
    ranks = spmd.get("world_size") if isinstance(spmd, dict) else None
    if isinstance(ranks, int) and ranks != layout.world_size:
        raise NrtError(NrtStatus.INVALID, f"{neff.path.name} was partitioned for {ranks} "
                       f"ranks, but this job runs {layout.world_size} ({layout.processes} "
                       f"processes x {layout.per_process}): run it with --world-size {ranks}")


def check_same_collectives(per_process: Sequence[Sequence[Mapping]]) -> None:
    """NrtError(INVALID) naming the first collective on which two processes' programs
    disagree (kind, groups, shapes, order)."""
    first = per_process[0]
    for process, theirs in enumerate(per_process[1:], start=1):
        for i in range(max(len(first), len(theirs))):
            a = first[i] if i < len(first) else None
            b = theirs[i] if i < len(theirs) else None
            if a != b:
                raise NrtError(NrtStatus.INVALID, f"the ranks loaded different collectives: "
                               f"collective #{i} is {_brief(a)} in process 0 but {_brief(b)} "
                               f"in process {process}")


def _brief(entry: Mapping | None) -> str:
    if entry is None:
        return "absent"
    keep = {k: entry[k] for k in ("kind", "replica_groups", "dtype", "bytes") if k in entry}
    return json.dumps(keep, separators=(",", ":"))
