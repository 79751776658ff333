"""`neuronx-cc train CONFIG.yaml [KEY.PATH=VALUE ...]`: train as NxD Training configures it.

The YAML's keys are NxD Training's (`driver/train/config.py`); `KEY.PATH=VALUE` arguments
override them as NxD's (Hydra's) command line does (`+KEY=VALUE` adds a key, `++KEY=VALUE`
adds or replaces, `~KEY` deletes). `--dry-run` makes every check the real run makes before
its first step (`driver.train.prepare`, the one function both call) and prints the layout
(world size, TP/PP/DP, micro-batches per step, which ranks form which groups, the data)
without writing anything. `--plan` estimates the layout on real Trainium without running it
or reading data (`cli.plan_cmd`, `nxcc.plan`, docs/estimates.md). `--profile FILE` writes a
Chrome/Perfetto trace of every rank's steps. A bad file ends in one line,
`ERROR: [NCC_ETRN001] <key path>: <what>`, exit status 2, before anything is created under
`exp_dir`. Reading, checking and training are `nxcc.train`'s (`driver.api.train`); the
command prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from nxcc.backend.runtime.mpi_job import launched_processes, launched_rank
from nxcc.cli.errors import user_errors
from nxcc.cli.plan_cmd import PlanFlags, plan_cmd
from nxcc.cli.rank_process import joined, run_rank, split_off_rank
from nxcc.driver.api.train import check, load, run, warning_lines
from nxcc.driver.api.train import export_hf as export_checkpoint
from nxcc.driver.plan import trainable_instances
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.describe import describe_lines
from nxcc.errors import Error


def _load(config_path: str, overrides: tuple[str, ...], placement: bool) -> TrainConfig:
    """The checked configuration (`placement`: also where its ranks would run). Under an
    MPI launcher every process finds the same fault in the same file: process 0 says it,
    the others end with the same status silently."""
    try:
        return load(config_path, overrides, placement)
    except Error as exc:
        if launched_processes() > 1 and launched_rank() != 0:
            raise SystemExit(exc.exit_status) from None
        raise


def _export(config: TrainConfig, folder: str, max_shard_size: int) -> None:
    step, files = export_checkpoint(config, folder, max_shard_size)
    click.echo(f"exported step {step} of {config.exp_manager.exp_dir} to {folder}: "
               + ", ".join(files))


def _check_flags(dry_run: bool, plan: bool, export_hf: str | None, flags: PlanFlags) -> None:
    """UsageError for flags that do not go together."""
    if dry_run and plan:
        raise click.UsageError("--dry-run and --plan are two different checks: give one")
    if export_hf and (dry_run or plan):
        raise click.UsageError(f"--export-hf and {'--plan' if plan else '--dry-run'} "
                               "exclude each other")
    if flags.as_json and not (dry_run or plan):
        raise click.UsageError("--json applies to --dry-run and --plan")
    for flag, given in (("--instance", flags.instance), ("--search", flags.search),
                        ("--trace", flags.trace_path), ("--hbm-svg", flags.svg_path)):
        if given and not plan:
            raise click.UsageError(f"{flag} applies to --plan")
    if flags.nodes is not None and not flags.search:
        raise click.UsageError("--nodes applies to --plan --search")
    if flags.search and (flags.trace_path or flags.svg_path):
        raise click.UsageError("--trace and --hbm-svg draw one layout: not with --search")


def _dry_run(config: TrainConfig, as_json: bool, warn: Callable[[], None]) -> None:
    """Every check of the real run, then the layout."""
    info, job_warnings = check(config)
    warn()
    for line in job_warnings:
        click.echo(f"WARNING: {line}", err=True)
    click.echo(json.dumps(info, indent=1) if as_json else "\n".join(describe_lines(info)))


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("config_path", metavar="CONFIG.yaml", type=click.Path(dir_okay=False))
@click.argument("overrides", metavar="[[+|++]KEY.PATH=VALUE | ~KEY.PATH]...", nargs=-1)
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
@click.option("--export-hf", "export_hf", metavar="DIR", type=click.Path(file_okay=False),
              help="Write the latest checkpoint of exp_dir as a Hugging Face model folder "
                   "(config.json, model.safetensors) instead of training.")
@click.option("--max-shard-size", metavar="BYTES", type=click.IntRange(min=1),
              default=5 * 10**9, show_default=True,
              help="With --export-hf: cut model.safetensors into shards of at most this.")
@click.option("--profile", "profile_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="Write a Chrome/Perfetto trace (JSON) of every rank's steps: forward, "
              "backward and recomputation per micro-batch, collectives, transfers between "
              "stages, the optimizer update.")
@user_errors
def train_cmd(config_path: str, overrides: tuple[str, ...], dry_run: bool, plan: bool,
              instance: str | None, search: bool, nodes: int | None, trace_path: str | None,
              svg_path: str | None, as_json: bool, quiet: bool, export_hf: str | None,
              max_shard_size: int, profile_path: str | None) -> None:
    """Train the model CONFIG.yaml describes (NxD Training's YAML keys)."""
    flags = PlanFlags(instance, search, nodes, trace_path, svg_path, as_json, quiet)
    _check_flags(dry_run, plan, export_hf, flags)
    if profile_path and (dry_run or plan or export_hf):
        raise click.UsageError("--profile traces a training run: not with --dry-run, --plan "
                               "or --export-hf")
    if plan:
        plan_cmd(config_path, overrides, flags)
        return
    config = _load(config_path, overrides, placement=not export_hf)
    if export_hf:
        _export(config, export_hf, max_shard_size)
        return

    def warn() -> None:  # once the checks passed, once per job (not per process)
        if not quiet and launched_rank() == 0:
            for line in warning_lines(config):
                click.echo(f"WARNING: {line}", err=True)

    if dry_run:
        _dry_run(config, as_json, warn)
        return
    if launched_processes() > 1:
        split_off_rank()
        run_rank(lambda: run(config, config_path, on_joined=joined, on_prepared=warn,
                             profile=profile_path), family="NCC")
        return
    run(config, config_path, on_prepared=warn, profile=profile_path)
