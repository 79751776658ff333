"""The NeuronCores of a job's ranks: reserved on the simulated instances, exclusively.

A job of `nodes` x `per_node` ranks (a training job) has rank r on simulated instance
r // per_node (each node one instance of the type, as `NXCC_RANKS_PER_INSTANCE` lays out
an MPI run), one logical core per rank. Each process reserves the cores of its own ranks
through the ordinary allocation rules (`cores`), so they belong to it until it exits and
another job that wants them is refused naming this one:

- `NEURON_RT_VISIBLE_CORES` or `NEURON_RT_NUM_CORES` set: the cores they give the process,
  which must be as many as its ranks on the node;
- else the first free block of the node's `per_node` consecutive cores that starts where
  the topology lets a rank set start (a multiple of the block's size on a torus or a
  switch; any core on inf2's ring), so that two jobs that fit side by side both run.
  Processes sharing a node (an MPI job) take consecutive parts of one block: the node's
  first process finds it, the others learn it (`gather`).

Every node's rank set must then be one the instance's collectives support
(`collective_groups.check_rank_set`). Under MPI a failure in any process is every
process's: `gather` carries each one's outcome; the first process that failed raises its
own error, the others `PeerFailed` (so that the job reports one line).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from nxcc.backend.runtime.collective_binding import Placement
from nxcc.backend.runtime.collective_groups import check_rank_set
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.cores import (
    CoreAllocation,
    allocate,
    allocate_block,
    format_cores,
    free_block,
    no_block,
)
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import Instance

Gather = Callable[[object], list[object]]


def _alone(value: object) -> list[object]:
    return [value]


class PeerFailed(NrtError):
    """Another process of the job failed to reserve its cores (it reports why)."""


@dataclass
class JobCores:
    """Where every rank of the job runs: `cores[r]` = (simulated instance, logical core);
    `allocations` are this process's reservations."""

    instance: Instance
    lnc: int
    per_node: int
    cores: tuple[tuple[int, int], ...]
    allocations: list[CoreAllocation]

    def placement(self, ranks: Sequence[int], core: int = 0) -> Placement:
        """The placement of a group of `ranks` (in group order) for binding its
        collectives: physical core `core` of each one's logical core, and its instance."""
        where = [self.cores[r] for r in ranks]
        return Placement(self.instance, self.lnc,
                         tuple(self.instance.physical_of(c, self.lnc)[core] for _, c in where),
                         tuple(i for i, _ in where) if len({i for i, _ in where}) > 1 else ())

    def node_cores(self, node: int) -> list[int]:
        return [c for i, c in self.cores if i == node]

    def describe(self) -> list[str]:
        """One line per node: its instance and cores."""
        nodes = sorted({i for i, _ in self.cores})
        return [f"node {n}: {format_cores(self.node_cores(n))} of {self.instance.name}"
                + (f" #{n}" if len(nodes) > 1 else "") + f" (LNC={self.lnc})" for n in nodes]

    def release(self) -> None:
        for a in self.allocations:
            a.release()


def block_align(instance: Instance, count: int) -> int:
    """Where a rank set of `count` may start: anywhere on inf2's ring, else at a multiple
    of its size (`check_rank_set`)."""
    return 1 if instance.family == "inf2" else count


def reserve_job_cores(config: RuntimeConfig, instance: Instance, lnc: int, per_node: int,
                      local_ranks: Sequence[int], world: int,
                      gather: Gather = _alone, process: int = 0) -> JobCores:
    """Reserve this process's ranks' cores (see the module docstring); `gather(value)`
    returns every process's value in process order (one process: `[value]`), `process` is
    this one's place in that order."""
    allocations: list[CoreAllocation] = []
    try:
        mine, error = _reserve_mine(config, instance, lnc, per_node, local_ranks, gather,
                                    allocations), None
    except NrtError as exc:
        mine, error = [], exc
    outcomes = gather((int(error.status), error.args[0]) if error is not None else mine)
    failed = [(p, o) for p, o in enumerate(outcomes) if isinstance(o, tuple)]
    if failed:
        for a in allocations:
            a.release()
        first, (status, message) = failed[0]
        if error is not None and first == process:
            raise error
        raise PeerFailed(NrtStatus.of(status), f"process {first} of the job failed: {message}")
    cores = tuple(c for block in outcomes if isinstance(block, list) for c in block)
    if len(cores) != world:
        raise NrtError(NrtStatus.INVALID, f"the processes placed {len(cores)} ranks, the job "
                       f"has {world}")
    job = JobCores(instance, lnc, per_node, cores, allocations)
    try:
        for node in sorted({i for i, _ in cores}):
            check_rank_set(instance, lnc, job.node_cores(node))
    except NrtError:
        job.release()
        raise
    return job


def _reserve_mine(config: RuntimeConfig, instance: Instance, lnc: int, per_node: int,
                  local_ranks: Sequence[int], gather: Gather,
                  allocations: list[CoreAllocation]) -> list[tuple[int, int]]:
    """This process's (instance, logical core) per local rank, its cores reserved."""
    nodes: dict[int, list[int]] = {}
    for r in local_ranks:
        nodes.setdefault(r // per_node, []).append(r)
    chosen = config.visible_cores is not None or config.num_cores > 0
    whole = all(len(ranks) == per_node for ranks in nodes.values())
    if len(nodes) > 1 and not whole:
        raise NrtError(NrtStatus.INVALID, f"this process's ranks {list(local_ranks)} take "
                       f"part of several nodes of {per_node} ranks: give every process the "
                       "ranks of one node, or of whole nodes")
    starts = _agreed_starts(config, instance, lnc, per_node, local_ranks[0],
                            not (chosen or whole), gather)
    out: list[tuple[int, int]] = []
    for node, ranks in nodes.items():
        here = dataclasses.replace(config, instance_index=node)
        if chosen:
            got = allocate(here, instance, lnc)
        elif whole:
            got = allocate_block(here, instance, lnc, per_node,
                                 block_align(instance, per_node), _wanted(per_node, node))
        else:
            first = starts[node] + ranks[0] % per_node
            got = allocate(dataclasses.replace(here, visible_cores=(first, first + len(ranks) - 1)),
                           instance, lnc)
        allocations.append(got)
        if len(got.cores) != len(ranks):
            raise NrtError(NrtStatus.LOAD_NOT_ENOUGH_NC, f"this process runs {len(ranks)} "
                           f"ranks of node {node} but was given {len(got.cores)} NeuronCores "
                           f"({got.describe()}, by NEURON_RT_VISIBLE_CORES / "
                           "NEURON_RT_NUM_CORES): give it as many as its ranks")
        out += [(node, c) for c in got.cores]
    return out


def _wanted(count: int, node: int) -> str:
    return f"the job's {count} ranks on node {node} need {count} consecutive free NeuronCores"


def _agreed_starts(config: RuntimeConfig, instance: Instance, lnc: int, per_node: int,
                   first: int, needed: bool, gather: Gather) -> dict[int, int]:
    """Node -> the first core of its block, where processes share a node (`needed`): found
    by the node's first process, learned by the others. Every process takes part in the
    one `gather`, needed or not; NrtError LOAD_NOT_ENOUGH_NC, naming the holders, in every
    process when a node has no free block."""
    node = first // per_node
    found: object = None
    if needed and first % per_node == 0:
        here = dataclasses.replace(config, instance_index=node)
        start = free_block(here, instance, lnc, per_node, block_align(instance, per_node))
        if start is None:
            error = no_block(here, instance, lnc, _wanted(per_node, node))
            found = ("refused", int(error.status), error.args[0])
        else:
            found = ("start", node, start)
    starts: dict[int, int] = {}
    for entry in gather(found):
        if isinstance(entry, tuple) and entry[0] == "refused":
            raise NrtError(NrtStatus.of(entry[1]), entry[2])
        if isinstance(entry, tuple):
            starts[entry[1]] = entry[2]
    return starts
