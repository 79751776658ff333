"""`neuronx-cc train CONFIG.yaml [KEY.PATH=VALUE ...]`: train as NxD Training configures it.

The YAML's keys are NxD Training's (`driver/train/config.py`); `KEY.PATH=VALUE` arguments
override them as NxD's (Hydra's) command line does (`+KEY=VALUE` adds a key, `++KEY=VALUE`
adds or replaces, `~KEY` deletes). `--dry-run` makes every check the real run makes before
its first step (`driver.train.prepare`, the one function both call) and prints the layout
(world size, TP/PP/DP, micro-batches per step, which ranks form which groups, the data)
without writing anything. `--profile FILE` writes a Chrome/Perfetto trace of every rank's
steps. A bad file ends in one line, `ERROR: [NCC_ETRN001] <key path>:
<what>`, exit status 2, before anything is created under `exp_dir`. Reading, checking and
training are `nxcc.train`'s (`driver.api.train`); the command prints.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import click

from nxcc.backend.runtime.mpi_job import launched_processes, launched_rank
from nxcc.cli.errors import user_errors
from nxcc.cli.rank_process import joined, run_rank, split_off_rank
from nxcc.driver.api.train import check, load, run, warning_lines
from nxcc.driver.api.train import export_hf as export_checkpoint
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
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the layout as JSON.")
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
def train_cmd(config_path: str, overrides: tuple[str, ...], dry_run: bool, as_json: bool,
              quiet: bool, export_hf: str | None, max_shard_size: int,
              profile_path: str | None) -> None:
    """Train the model CONFIG.yaml describes (NxD Training's YAML keys)."""
    if as_json and not dry_run:
        raise click.UsageError("--json applies to --dry-run")
    if export_hf and dry_run:
        raise click.UsageError("--export-hf and --dry-run exclude each other")
    if profile_path and (dry_run or export_hf):
        raise click.UsageError("--profile traces a training run: not with --dry-run or "
                               "--export-hf")
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
