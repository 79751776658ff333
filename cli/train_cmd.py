"""`neuronx-cc train CONFIG.yaml [KEY.PATH=VALUE ...]`: train as NxD Training configures it.

The YAML's keys are NxD Training's (`driver/train/config.py`); `KEY.PATH=VALUE` arguments
override them as NxD's command line does. `--dry-run` checks the file and the data and
prints the layout (world size, TP/PP/DP, micro-batches per step, which ranks form which
groups) without writing anything. `--plan` estimates the layout on real Trainium without
running it (`cli.plan_cmd`, docs/estimates.md). A bad file ends in one line,
`ERROR: [NCC_ETRN001] <key path>: <what>`, exit status 2, before anything is created under
`exp_dir`.
"""

from __future__ import annotations

import json

import click

from nxcc.backend.runtime.mpi_job import launched_processes, launched_rank
from nxcc.cli.errors import ARGUMENT_ERROR, fail, user_errors
from nxcc.cli.plan_cmd import PlanFlags, plan_cmd
from nxcc.cli.rank_process import joined, run_rank, split_off_rank
from nxcc.driver.plan import trainable_instances
from nxcc.driver.train.config import TrainConfig, load_config
from nxcc.driver.train.describe import describe, describe_lines
from nxcc.driver.train.errors import TRAIN_CONFIG, TrainConfigError

ENGINE = "nxcc.driver.train.run"


def ignored_warning(config: TrainConfig) -> str | None:
    """The one warning line listing the NxD keys present that nxcc does not act on."""
    if not config.ignored_keys:
        return None
    return ("WARNING: NxD Training keys accepted but not acted on by nxcc: "
            + ", ".join(config.ignored_keys))


def _check_flags(dry_run: bool, plan: bool, instance: str | None, search: bool,
                 nodes: int | None, trace_path: str | None, svg_path: str | None,
                 as_json: bool) -> None:
    """UsageError for flags that do not go together."""
    if dry_run and plan:
        raise click.UsageError("--dry-run and --plan are two different checks: give one")
    if as_json and not (dry_run or plan):
        raise click.UsageError("--json applies to --dry-run and --plan")
    for flag, given in (("--instance", instance), ("--search", search),
                        ("--trace", trace_path), ("--hbm-svg", svg_path)):
        if given and not plan:
            raise click.UsageError(f"{flag} applies to --plan")
    if nodes is not None and not search:
        raise click.UsageError("--nodes applies to --plan --search")
    if search and (trace_path or svg_path):
        raise click.UsageError("--trace and --hbm-svg draw one layout: not with --search")


def _load(config_path: str, overrides: tuple[str, ...]) -> tuple[TrainConfig, dict]:
    try:
        config = load_config(config_path, overrides)
        return config, describe(config)
    except TrainConfigError as exc:
        fail(str(exc), ARGUMENT_ERROR)
        raise AssertionError("unreachable") from exc


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("config_path", metavar="CONFIG.yaml", type=click.Path(dir_okay=False))
@click.argument("overrides", metavar="[KEY.PATH=VALUE]...", nargs=-1)
@click.option("--dry-run", is_flag=True,
              help="Check the configuration and data, print the rank layout, write nothing.")
@click.option("--plan", "plan", is_flag=True,
              help="Estimate the layout on real Trainium (HBM per core, step time, "
              "throughput) without running it or reading data; exit 1 if it does not fit.")
@click.option("--instance", type=click.Choice(trainable_instances()), default=None,
              help="With --plan: the instance type (default trn1.32xlarge; trn2.48xlarge "
              "for a config that sets trainer.lnc).")
@click.option("--search", is_flag=True,
              help="With --plan: rank every layout of the model that fits by throughput.")
@click.option("--nodes", type=click.IntRange(min=1), default=None,
              help="With --plan --search: the node count (default trainer.num_nodes).")
@click.option("--trace", "trace_path", type=click.Path(dir_okay=False), default=None,
              help="With --plan: write one step's 1F1B schedule as a Perfetto trace (JSON).")
@click.option("--hbm-svg", "svg_path", type=click.Path(dir_okay=False), default=None,
              help="With --plan: write the HBM breakdown per stage as an SVG bar chart.")
@click.option("--json", "as_json", is_flag=True,
              help="With --dry-run or --plan: one JSON object.")
@click.option("--quiet", is_flag=True, help="No warning line for ignored NxD keys.")
@user_errors
def train_cmd(config_path: str, overrides: tuple[str, ...], dry_run: bool, plan: bool,
              instance: str | None, search: bool, nodes: int | None, trace_path: str | None,
              svg_path: str | None, as_json: bool, quiet: bool) -> None:
    """Train the model CONFIG.yaml describes (NxD Training's YAML keys)."""
    _check_flags(dry_run, plan, instance, search, nodes, trace_path, svg_path, as_json)
    if plan:
        plan_cmd(config_path, overrides, PlanFlags(instance, search, nodes, trace_path,
                                                   svg_path, as_json, quiet))
        return
    config, info = _load(config_path, overrides)
    warning = ignored_warning(config)
    if warning and not quiet and launched_rank() == 0:  # once per job, not per process
        click.echo(warning, err=True)
    if dry_run:
        if as_json:
            click.echo(json.dumps(info, indent=1))
        else:
            click.echo("\n".join(describe_lines(info)))
        return
    try:
        from nxcc.driver.train.run import run_training
    except ModuleNotFoundError as exc:
        if exc.name != ENGINE:
            raise
        fail(f"[{TRAIN_CONFIG}] {config_path}: this build of nxcc has no training engine "
             f"({ENGINE}); only --dry-run is available", ARGUMENT_ERROR)
    if launched_processes() > 1:
        split_off_rank()
        run_rank(lambda: run_training(config, on_joined=joined), family="NCC")
        return
    run_training(config)
