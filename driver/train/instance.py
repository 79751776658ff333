"""The simulated instance a training job runs on: its type, the compile target and the LNC.

`training_instance(config, runtime)` decides, as `neuronx-cc run` decides for a NEFF:

- the instance type: `NXCC_INSTANCE_TYPE` when set; else the default instance of the target
  `compiler_flags` names (`--target trn2` -> trn2.48xlarge); else trn2.48xlarge when the
  file sets `trainer.lnc` (only Trainium2 and later group physical cores), else
  trn1.32xlarge;
- the compile target: the `--target` of `compiler_flags` (same NeuronCore generation as the
  instance), else the instance's family: every stage is compiled for it;
- the LNC: `trainer.lnc`, the `--lnc`/`-lnc`/`--logical-nc-config` of `compiler_flags` and
  `NEURON_LOGICAL_NC_CONFIG` where given, which must agree (the LNC seed: the compiler's LNC
  is the runtime's), else the instance's default (2 on trn2); it must be one the instance
  offers.

`check_placement` then applies the instance's rules to the job's ranks: at most the
instance's logical cores per node (`trainer.devices`), EFA to join several nodes, and
collectives on rank sets the topology supports (the collective seed: 2, 8 or 32 ranks on a
trn1.32xlarge, any even number on inf2...). Every TP, DP and embedding group of a node runs
its collective at the same time as the node's other groups of that kind, so the set a
collective runs on is the node's ranks taking part: all of them when TP or DP > 1 (and for
the job-wide reductions). A node whose rank count the topology does not support is refused
in one line naming its groups and the sizes the instance allows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nxcc.backend.runtime.collective_groups import describe_counts, possible_rank_counts
from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.inventory import software_id
from nxcc.backend.runtime.topology import (
    DEFAULT_INSTANCE,
    DEFAULT_INSTANCE_FOR_TARGET,
    GENERATION,
    INSTANCES,
    Instance,
)
from nxcc.driver.options import TARGETS
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.layout import RankLayout

#: The instance of a file that sets `trainer.lnc` and names no other.
LNC_INSTANCE = "trn2.48xlarge"
LNC_FLAGS = ("--lnc", "-lnc", "--logical-nc-config")


@dataclass(frozen=True)
class TrainingInstance:
    """Where a job runs: `instance` at LNC `lnc`, its stages compiled for `target`; `source`
    says what chose the instance."""

    instance: Instance
    lnc: int
    target: str
    source: str

    @property
    def logical_cores(self) -> int:
        return self.instance.logical_cores(self.lnc)

    def describe(self) -> dict[str, object]:
        return {"instance_type": self.instance.name, "instance_source": self.source,
                "target": self.target, "lnc": self.lnc,
                "software_id": software_id(self.instance, self.lnc),
                "logical_cores": self.logical_cores}


def flag_value(flags: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the last of `names` in a compiler command line (`--x v` or `--x=v`)."""
    found = None
    for i, word in enumerate(flags):
        name, eq, value = word.partition("=")
        if name in names:
            if eq:
                found = value
            elif i + 1 < len(flags):
                found = flags[i + 1]
            else:
                raise TrainConfigError("compiler_flags", f"{word} is missing its value")
    return found


def _flag_target(config: TrainConfig) -> str | None:
    target = flag_value(config.compiler_flags, ("--target",))
    if target is not None and target not in TARGETS:
        raise TrainConfigError("compiler_flags", f"--target {target!r} is not one of "
                               f"{', '.join(TARGETS)}")
    return target


def _flag_lnc(config: TrainConfig) -> int | None:
    text = flag_value(config.compiler_flags, LNC_FLAGS)
    if text is None:
        return None
    if text not in ("1", "2"):
        raise TrainConfigError("compiler_flags", f"--lnc {text!r} is not 1 or 2")
    return int(text)


def _instance(config: TrainConfig, runtime: RuntimeConfig, target: str | None
              ) -> tuple[Instance, str]:
    if runtime.instance_type:
        return INSTANCES[runtime.instance_type], "NXCC_INSTANCE_TYPE"
    if target is not None:
        return INSTANCES[DEFAULT_INSTANCE_FOR_TARGET[target]], f"compiler_flags --target {target}"
    if config.trainer.lnc is not None:
        return INSTANCES[LNC_INSTANCE], "trainer.lnc"
    return INSTANCES[DEFAULT_INSTANCE], "default"


def _agreed_lnc(config: TrainConfig, runtime: RuntimeConfig, instance: Instance) -> int:
    """The one LNC every setting that gives one names, else the instance's default."""
    given = [(where, value) for where, value in (
        ("trainer.lnc", config.trainer.lnc), ("compiler_flags --lnc", _flag_lnc(config)),
        ("NEURON_LOGICAL_NC_CONFIG", runtime.logical_nc_config)) if value is not None]
    if len({value for _, value in given}) > 1:
        said = ", ".join(f"{where} {value}" for where, value in given)
        raise TrainConfigError(given[0][0], f"the LNC settings disagree ({said}): the compiler "
                               "must use the LNC the runtime is configured with")
    if not given:
        return instance.default_lnc
    where, lnc = given[0]
    if lnc not in instance.lnc_choices:
        raise TrainConfigError(where, f"LNC {lnc} is not offered by {instance.name} "
                               f"({instance.core_kind}: {', '.join(map(str, instance.lnc_choices))}"
                               "); LNC 2 exists only on trn2 and trn3 instances")
    return lnc


def training_instance(config: TrainConfig, runtime: RuntimeConfig) -> TrainingInstance:
    """The job's instance, compile target and LNC (see the module docstring)."""
    target = _flag_target(config)
    instance, source = _instance(config, runtime, target)
    if instance.generation < 2:
        raise TrainConfigError("NXCC_INSTANCE_TYPE", f"{instance.name} has "
                               f"{instance.core_kind}s, which nxcc compiles nothing for")
    if target is not None and GENERATION[target] != instance.generation:
        raise TrainConfigError("compiler_flags", f"--target {target} compiles for another "
                               f"NeuronCore than {instance.name}'s {instance.core_kind}")
    lnc = _agreed_lnc(config, runtime, instance)
    return TrainingInstance(instance, lnc, target or instance.family, source)


_KINDS = (("tp", "tensor-parallel"), ("dp", "data-parallel"))


def check_placement(config: TrainConfig, where: TrainingInstance) -> None:
    """TrainConfigError naming the key unless the job's ranks fit `where` (see the module
    docstring)."""
    inst, lnc, devices = where.instance, where.lnc, config.trainer.devices
    if devices > where.logical_cores:
        raise TrainConfigError("trainer.devices", f"{devices} ranks per node, but "
                               f"{inst.name} has {where.logical_cores} NeuronCores at LNC {lnc}")
    nodes = config.trainer.num_nodes
    if nodes > 1 and not inst.efa:
        raise TrainConfigError("trainer.num_nodes", f"{nodes} nodes of {inst.name}: EFA is not "
                               f"available on {inst.name}, and the ranks cannot be extended "
                               "beyond a single instance")
    if config.trainer.world_size == 1 or devices in possible_rank_counts(inst, lnc):
        return
    lay = config.distributed.layout
    raise TrainConfigError("trainer.devices", f"{devices} ranks per node of {inst.name}: "
                           f"{_collectives(lay, devices)}; {describe_counts(inst, lnc)}")


def _collectives(lay: RankLayout, devices: int) -> str:
    """What runs collectives over the node's `devices` ranks, in words."""
    kinds = [f"{name} groups of {getattr(lay, kind)}" for kind, name in _KINDS
             if getattr(lay, kind) > 1]
    if kinds:
        return f"its {' and '.join(kinds)} run their collectives over {devices} ranks at once"
    return f"the job's reductions run over its {devices} ranks"
