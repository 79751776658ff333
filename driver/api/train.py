"""`nxcc.train`: train as an NxD Training YAML configures it (`neuronx-cc train`).

`prepare` reads and checks the configuration, its overrides and its data (raising
`TrainConfigError`, NCC_ETRN001, before anything is written) and describes the run's layout;
`run` trains and returns the run's summary.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Sequence

from nxcc.driver.errors import CompileError
from nxcc.driver.train.config import TrainConfig, load_config
from nxcc.driver.train.describe import describe
from nxcc.errors import TRAIN_CONFIG

ENGINE = "nxcc.driver.train.run"
"""The module that runs training (a build may lack it: then only dry runs are possible)."""


def train(config: str | os.PathLike[str], overrides: Sequence[str] = (), *,
          dry_run: bool = False) -> dict[str, object]:
    """Train the model the YAML file `config` describes (NxD Training's keys), with
    `overrides` (`"KEY.PATH=VALUE"`, as on the command line) applied.

    `dry_run`: check the configuration and the data and return the run's layout (world
    size, TP/PP/DP, micro-batches per step, which ranks form which groups) without writing
    anything. Otherwise train, printing a line per logged step, and return the summary
    (final loss, steps, throughput...; under an MPI launcher, in process 0). NxD keys
    nxcc does not act on are named in a `UserWarning`. Raises `nxcc.CompileError`
    (NCC_ETRN001 for the configuration, NCC_ETRN002 a checkpoint, NCC_ETRN003 a rank)."""
    path = os.fspath(config)
    loaded, info = prepare(path, overrides)
    message = ignored_keys(loaded)
    if message:
        warnings.warn(message, UserWarning, stacklevel=2)
    if dry_run:
        return info
    return run(loaded, path)


def prepare(path: str, overrides: Sequence[str] = ()) -> tuple[TrainConfig, dict[str, object]]:
    """The configuration at `path` with `overrides`, checked, and its description (the
    layout `dry_run` returns); reads the data files, writes nothing."""
    loaded = load_config(path, tuple(overrides))
    return loaded, describe(loaded)


def ignored_keys(config: TrainConfig) -> str | None:
    """The sentence naming the NxD keys present that nxcc does not act on, if any."""
    if not config.ignored_keys:
        return None
    return ("NxD Training keys accepted but not acted on by nxcc: "
            + ", ".join(config.ignored_keys))


def engine(path: str) -> Callable[..., dict[str, object]]:
    """The training engine's `run_training`; CompileError (NCC_ETRN001) naming `path` when
    this build has none."""
    try:
        module = importlib.import_module(ENGINE)
    except ModuleNotFoundError as exc:
        if exc.name != ENGINE:
            raise
        raise CompileError(TRAIN_CONFIG, f"{path}: this build of nxcc has no training engine "
                           f"({ENGINE}); only --dry-run is available") from None
    run_training: Callable[..., dict[str, object]] = module.run_training
    return run_training


def run(config: TrainConfig, path: str,
        on_joined: Callable[[], None] | None = None) -> dict[str, object]:
    """Train as `config` says; the run's summary (see `driver.train.run.run_training`)."""
    return engine(path)(config, on_joined=on_joined)
