"""`neuronx-cc train CONFIG.yaml [KEY.PATH=VALUE ...]`: train as NxD Training configures it.

The YAML's keys are NxD Training's (`driver/train/config.py`); `KEY.PATH=VALUE` arguments
override them as NxD's command line does. `--dry-run` checks the file and the data and
prints the layout (world size, TP/PP/DP, micro-batches per step, which ranks form which
groups) without writing anything. A bad file ends in one line, `ERROR: [NCC_ETRN001] <key
path>: <what>`, exit status 2, before anything is created under `exp_dir`.
"""

from __future__ import annotations

import json

import click

from nxcc.backend.runtime.mpi_job import launched_processes, launched_rank
from nxcc.cli.errors import ARGUMENT_ERROR, fail, user_errors
from nxcc.cli.rank_process import joined, run_rank, split_off_rank
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
@click.option("--json", "as_json", is_flag=True, help="With --dry-run: the layout as JSON.")
@click.option("--quiet", is_flag=True, help="No warning line for ignored NxD keys.")
@user_errors
def train_cmd(config_path: str, overrides: tuple[str, ...], dry_run: bool, as_json: bool,
              quiet: bool) -> None:
    """Train the model CONFIG.yaml describes (NxD Training's YAML keys)."""
    if as_json and not dry_run:
        raise click.UsageError("--json applies to --dry-run")
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
