"""`nxcc.plan`: what a training configuration costs on real Trainium, before it runs
(`neuronx-cc train CONFIG.yaml --plan`).

`load` reads the configuration (no data is read, so none need exist) and its `trainer.lnc`;
`layout` plans the configured layout on an instance (`driver.plan`: HBM per NeuronCore,
step time, throughput, MFU); `ranked` plans every layout of the model on N nodes and ranks
them (`driver.plan.search`). `plan` is the Python entry point: it returns the object
`--plan --json` prints. The command line calls the same functions and prints.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence

from nxcc.driver.api.train import warning_lines
from nxcc.driver.plan import load_for_plan, plan_config
from nxcc.driver.plan.plan import Plan
from nxcc.driver.plan.report import plan_json
from nxcc.driver.plan.search import Search, search_layouts
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.errors import TrainConfigError

__all__ = ["load", "layout", "plan", "ranked"]


def plan(config: str | os.PathLike[str], overrides: Sequence[str] = (), *,
         instance: str | None = None, search: bool = False, nodes: int | None = None
         ) -> dict[str, object]:
    """Estimate the training run the YAML file `config` describes (NxD Training's keys,
    with `overrides` applied as on the command line) on real Trainium, without running it
    or reading its data.

    `instance`: the instance type (default trn1.32xlarge, or trn2.48xlarge for a file that
    sets `trainer.lnc`). Returns the plan of the file's layout: `fits`,
    `hbm_per_core_bytes` (the breakdown and its `total`), `hbm_capacity_bytes`,
    `step_time_s`, `sequences_per_s`, `tokens_per_s`, `mfu`, the layout and each stage's
    figures. With `search`, every layout of the model on `nodes` nodes (default
    `trainer.num_nodes`) ranked by throughput among those that fit (`ranked`). NxD keys nxcc
    does not act on are named in a `UserWarning`. Raises `nxcc.CompileError`
    (NCC_ETRN001) for a configuration, instance or node count that cannot be planned."""
    if nodes is not None and not search:
        raise TrainConfigError("nodes", "applies to a search (search=True)")
    if nodes is not None and (isinstance(nodes, bool) or not isinstance(nodes, int)
                              or nodes < 1):
        raise TrainConfigError("nodes", f"expected a positive integer, got {nodes!r}")
    loaded, lnc = load(os.fspath(config), overrides)
    result = ranked(loaded, lnc, instance, nodes).to_json() if search else \
        plan_json(layout(loaded, lnc, instance))
    for line in warning_lines(loaded):
        warnings.warn(line, UserWarning, stacklevel=2)
    return result


def load(path: str, overrides: Sequence[str] = ()) -> tuple[TrainConfig, int | None]:
    """The configuration at `path` with `overrides` applied (its data need not exist) and
    its `trainer.lnc` (None when not set)."""
    return load_for_plan(path, tuple(overrides))


def layout(config: TrainConfig, lnc: int | None, instance: str | None) -> Plan:
    """The plan of `config`'s own layout on `instance`."""
    return plan_config(config, lnc, instance)


def ranked(config: TrainConfig, lnc: int | None, instance: str | None, nodes: int | None
           ) -> Search:
    """Every layout of `config`'s model on `nodes` nodes, ranked."""
    return search_layouts(config, lnc, instance, nodes)
