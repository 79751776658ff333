"""`neuronx-cc train CONFIG.yaml [KEY.PATH=VALUE ...]`: train as NxD Training configures it.

The YAML's keys are NxD Training's (`driver/train/config.py`); `KEY.PATH=VALUE` arguments
override them as NxD's command line does. `--dry-run` checks the file and the data and
prints the layout (world size, TP/PP/DP, micro-batches per step, which ranks form which
groups) without writing anything. A bad file ends in one line, `ERROR: [NCC_ETRN001] <key
path>: <what>`, exit status 2, before anything is created under `exp_dir`. Reading,
checking and training are `nxcc.train`'s (`driver.api.train`); the command prints.
"""

from __future__ import annotations

import json

import click

from nxcc.backend.runtime.mpi_job import launched_processes, launched_rank
from nxcc.cli.errors import user_errors
from nxcc.cli.rank_process import joined, run_rank, split_off_rank
from nxcc.driver.api.train import ignored_keys, prepare, run
from nxcc.driver.train.describe import describe_lines


@click.command("train", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("config_path", metavar="CONFIG.yaml", type=click.Path(dir_okay=False))
@click.argument("overrides", metavar="[KEY.PATH=VALUE]...", nargs=-1)
@click.option("--dry-run", is_flag=True,
              help="Check the configuration and data, print the rank layout, write nothing.")
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the layout as JSON.")
@click.option("--quiet", is_flag=True, help="No warning line for ignored NxD keys.")
@user_errors
def train_cmd(config_path: str, overrides: tuple[str, ...], dry_run: bool, as_json: bool,
              quiet: bool) -> None:
    """Train the model CONFIG.yaml describes (NxD Training's YAML keys)."""
    if as_json and not dry_run:
        raise click.UsageError("--json applies to --dry-run")
    config, info = prepare(config_path, overrides)
    warning = ignored_keys(config)
    if warning and not quiet and launched_rank() == 0:  # once per job, not per process
        click.echo(f"WARNING: {warning}", err=True)
    if dry_run:
        if as_json:
            click.echo(json.dumps(info, indent=1))
        else:
            click.echo("\n".join(describe_lines(info)))
        return
    if launched_processes() > 1:
        split_off_rank()
        run_rank(lambda: run(config, config_path, on_joined=joined), family="NCC")
        return
    run(config, config_path)
