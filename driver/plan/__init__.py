"""`train --plan`: what a training configuration costs on real Trainium, before it runs.

    plan = plan_training("hf_llama3_70B_config.yaml", ("trainer.num_nodes=16",),
                         instance="trn1.32xlarge")
    plan.fits, plan.worst.hbm, plan.sequences_per_s      # report.plan_json(plan)

The layout's stage programs are built as `train` builds them, at the model's real size, as
IR without weights (`stages`), bound to the instance's links (`machine`), played through
1F1B (`timeline`) and summed up (`plan`); `search` ranks every layout of a model on N
nodes; `pictures` draws the schedule and the HBM breakdown. docs/estimates.md is the
user's page.
"""

from __future__ import annotations

from nxcc.driver.plan.machine import machine_for
from nxcc.driver.plan.plan import Plan, make_plan
from nxcc.driver.train.config import TrainConfig, load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.overrides import apply_overrides
from nxcc.driver.train.yaml_tree import lookup, read_tree, resolve
from nxcc.ir.hardware import INSTANCE_TYPES, InstanceType

#: The instance of a config that names none: trn2's when it sets `trainer.lnc` (only trn2
#: has logical cores of several), else trn1's.
DEFAULT_INSTANCE, LNC_INSTANCE = "trn1.32xlarge", "trn2.48xlarge"

__all__ = ["Plan", "check_plannable", "instance_for", "load_for_plan", "make_plan",
           "plan_config", "plan_training", "trainable_instances"]


def trainable_instances() -> list[str]:
    """The instance types a plan can target: those whose chip has published TensorEngine
    rates and HBM bandwidth (not NeuronCore-v1)."""
    return [n for n, t in INSTANCE_TYPES.items() if t.chip.generation >= 2]


def load_for_plan(path: str, overrides: tuple[str, ...] = ()) -> tuple[TrainConfig, int | None]:
    """The configuration (no data needed) and its `trainer.lnc` (None when not set; NxD's
    trn2 configs set it, nxcc's training does not act on it)."""
    config = load_config(path, overrides, plan=True)
    tree = read_tree(path)
    apply_overrides(tree, overrides)
    found, raw = lookup(tree, "trainer.lnc")
    value = resolve(tree, "trainer.lnc", raw) if found else None
    if value is None:
        return config, None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise TrainConfigError("trainer.lnc", f"expected a positive integer, got {value!r}")
    return config, value


def check_plannable(config: TrainConfig) -> None:
    """TrainConfigError naming the key when `config` trains a model other than the built-in
    decoder (an ONNX file or a model of your own: trained, not planned)."""
    if config.model is not None:
        return
    key, what = ("model.module", "a model of your own") if config.module is not None else \
        ("model.onnx_path", "an ONNX model")
    raise TrainConfigError(key, f"a plan is made for the built-in decoder; {what} is "
                                "trained but not planned")


def instance_for(lnc: int | None, instance: str | None) -> InstanceType:
    """The instance type named (None: `DEFAULT_INSTANCE`, or `LNC_INSTANCE` for a config that
    sets `trainer.lnc`); TrainConfigError for one a plan cannot target."""
    name = instance or (LNC_INSTANCE if lnc is not None else DEFAULT_INSTANCE)
    if name not in trainable_instances():
        raise TrainConfigError("--instance", f"{name!r} is not an instance type a plan "
                               f"targets ({', '.join(trainable_instances())})")
    return INSTANCE_TYPES[name]


def plan_config(config: TrainConfig, lnc: int | None, instance: str | None) -> Plan:
    """The plan of `config` on `instance` (see `instance_for`)."""
    check_plannable(config)
    spec = instance_for(lnc, instance)
    machine = machine_for(spec, lnc, config.trainer.num_nodes, config.trainer.devices)
    return make_plan(config, machine)


def plan_training(path: str, overrides: tuple[str, ...] = (), instance: str | None = None
                  ) -> Plan:
    """The plan of the run the YAML file `path` describes (see the module docstring)."""
    config, lnc = load_for_plan(path, overrides)
    return plan_config(config, lnc, instance)
