"""Where a job's ranks sit and the links their collectives bind.

A job of `nodes` instances at LNC `lnc` has `trainer.devices` ranks per node (at most the
instance's logical cores), numbered node by node, chip by chip (as the runtime numbers
NeuronCores). A group of ranks binds, as the runtime binds a collective placeholder:

- on one chip: the chip's shared HBM (its bandwidth per core);
- within one instance: NeuronLink (the chip's link bandwidth, shared by its cores);
- across instances: EFA (the instance's bandwidth, shared by its cores: every core of a
  node runs its own group's collective at the same time).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.driver.train.errors import TrainConfigError
from nxcc.ir.hardware import Chip, InstanceType

HBM, NEURONLINK, EFA, LOCAL = "HBM", "NeuronLink", "EFA", "none"


@dataclass(frozen=True)
class Machine:
    """`nodes` instances of `instance` at LNC `lnc`, `ranks_per_node` ranks on each (one
    per logical core, from the first: `trainer.devices`)."""

    instance: InstanceType
    lnc: int
    nodes: int
    ranks_per_node: int

    @property
    def chip(self) -> Chip:
        return self.instance.chip

    @property
    def cores_per_node(self) -> int:
        return self.ranks_per_node

    @property
    def cores_per_chip(self) -> int:
        return self.chip.cores // self.lnc

    @property
    def world(self) -> int:
        return self.nodes * self.cores_per_node

    def node_of(self, rank: int) -> int:
        return rank // self.cores_per_node

    def chip_of(self, rank: int) -> int:
        return rank // self.cores_per_chip

    def link(self, ranks: Sequence[int]) -> tuple[str, float]:
        """The link a group of `ranks` binds and one rank's bandwidth on it (bytes/s)."""
        if len(set(ranks)) <= 1:
            return LOCAL, float("inf")
        if len({self.node_of(r) for r in ranks}) > 1:
            return EFA, self.instance.efa_bytes_per_s / self.cores_per_node
        if len({self.chip_of(r) for r in ranks}) == 1:
            return HBM, self.chip.core_hbm_bytes_per_s(self.lnc)
        return NEURONLINK, self.instance.chip_link_bytes_per_s / self.cores_per_chip


def machine_for(instance: InstanceType, lnc: int | None, nodes: int, devices: int) -> Machine:
    """The machine of a job of `nodes` x `devices` ranks on `instance` at LNC `lnc` (None:
    the instance's default); TrainConfigError naming the key when they do not fit."""
    lnc = instance.default_lnc if lnc is None else lnc
    if lnc not in instance.lnc_choices:
        raise TrainConfigError("trainer.lnc", f"{lnc} is not an LNC {instance.name} offers "
                               f"({', '.join(map(str, instance.lnc_choices))})")
    cores = instance.logical_cores(lnc)
    if devices > cores:
        raise TrainConfigError("trainer.devices", f"{devices} ranks per node, but "
                               f"{instance.name} has {cores} NeuronCores at LNC {lnc}")
    if nodes > 1 and instance.efa_bytes_per_s <= 0:
        raise TrainConfigError("trainer.num_nodes", f"{nodes} nodes, but {instance.name} has "
                               "no EFA to join instances")
    return Machine(instance, lnc, nodes, devices)
