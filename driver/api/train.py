"""`nxcc.train`: train as an NxD Training YAML configures it (`neuronx-cc train`).

`load` reads the configuration with its overrides; `dry_run` makes every check the real run
makes before its first step (`driver.train.prepare.prepare_job`, the one function both call)
and describes the run's layout, writing nothing; `run` trains and returns the run's summary;
`export_hf` writes a run's latest checkpoint as a Hugging Face model folder. Every
configuration refusal is a `TrainConfigError` (NCC_ETRN001) raised before anything is written
under `exp_dir`.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Sequence

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.driver.errors import CompileError
from nxcc.driver.train.config import TrainConfig, load_config
from nxcc.driver.train.describe import describe
from nxcc.driver.train.hf_checkpoint import export_hf as export
from nxcc.driver.train.instance import check_placement, training_instance
from nxcc.driver.train.prepare import prepare_job
from nxcc.errors import TRAIN_CONFIG

ENGINE = "nxcc.driver.train.run"
"""The module that runs training (a build may lack it: then only dry runs are possible)."""


def train(config: str | os.PathLike[str], overrides: Sequence[str] = (), *,
          dry_run: bool = False, profile: str | os.PathLike[str] | None = None
          ) -> dict[str, object]:
    """Train the model the YAML file `config` describes (NxD Training's keys), with
    `overrides` (`"KEY.PATH=VALUE"`, `"+KEY=VALUE"`, `"~KEY"`, as on the command line)
    applied.

    `dry_run`: make every check of the real run and return the run's layout (world size,
    TP/PP/DP, micro-batches per step, which ranks form which groups, the data) without
    writing anything. Otherwise train, printing a line per logged step, and return the
    summary (final loss, steps, throughput...; under an MPI launcher, in process 0).
    `profile`: write a Chrome/Perfetto trace of every rank's steps there (docs/training.md).
    NxD keys nxcc does not act on are named in a `UserWarning` once the checks passed. Raises
    `nxcc.CompileError` (NCC_ETRN001 for the configuration, NCC_ETRN002 a checkpoint,
    NCC_ETRN003 a rank)."""
    path = os.fspath(config)
    loaded = load(path, overrides)

    def warn() -> None:
        for line in warning_lines(loaded):
            warnings.warn(line, UserWarning, stacklevel=3)

    if dry_run:
        info, job_warnings = check(loaded)
        warn()
        for line in job_warnings:
            warnings.warn(line, UserWarning, stacklevel=2)
        return info
    return run(loaded, path, on_prepared=warn,
               profile=None if profile is None else os.fspath(profile))


def load(path: str, overrides: Sequence[str] = (), placement: bool = True) -> TrainConfig:
    """The configuration at `path` with `overrides` applied, its keys checked, and (with
    `placement`) its ranks against the simulated instance it will run on
    (`driver.train.instance`)."""
    config = load_config(path, tuple(overrides))
    if placement:
        check_placement(config, training_instance(config, RuntimeConfig.from_env()))
    return config


def check(config: TrainConfig) -> tuple[dict[str, object], list[str]]:
    """Every check of the real run (no index cache written), then (the run's layout, the
    warnings the checks found)."""
    job = prepare_job(config, lambda _: None, write_cache=False)
    return describe(job), list(job.warnings)


def warning_lines(config: TrainConfig) -> list[str]:
    """The sentence naming the NxD keys present that nxcc does not act on, if any."""
    if not config.ignored_keys:
        return []
    return ["NxD Training keys accepted but not acted on by nxcc: "
            + ", ".join(config.ignored_keys)]


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


def run(config: TrainConfig, path: str, on_joined: Callable[[], None] | None = None,
        on_prepared: Callable[[], None] | None = None, profile: str | None = None
        ) -> dict[str, object]:
    """Train as `config` says; the run's summary (see `driver.train.run.run_training`:
    `on_prepared` is called once every check passed, before anything is written; `profile`
    where to write the trace)."""
    if profile is None:
        return engine(path)(config, on_joined=on_joined, on_prepared=on_prepared)
    return engine(path)(config, on_joined=on_joined, on_prepared=on_prepared,
                        profile=profile)


def export_hf(config: TrainConfig, folder: str, max_shard_size: int) -> tuple[int, list[str]]:
    """Write the latest checkpoint of `config`'s run as a Hugging Face model folder:
    (its step, the files written)."""
    return export(config, folder, max_shard_size)
