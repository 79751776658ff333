"""Validation every `val_check_interval` steps over `limit_val_batches` batches (`val_loss` in
metrics.jsonl and in the log line), and TensorBoard event files that TensorBoard's own reader
reads back: loss, lr, val_loss and NxD's other scalars."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.metrics import read_metrics
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, assert_one_line_error, neuronx_cc

GPT = REPO / "examples" / "train" / "megatron_gpt_tiny.yaml"
FROZEN = ("model.optim.lr=0.0", "model.optim.sched.name=constant", "trainer.max_steps=4",
          "trainer.val_check_interval=2", "trainer.limit_val_batches=2", "+data.val_dir=data",
          "exp_manager.resume_if_exists=false", "exp_manager.create_checkpoint_callback=false",
          "model.encoder_seq_length=16")
ONE = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1")


def _run(exp: Path, *overrides: str) -> dict:
    config = load_config(str(GPT), (f"exp_manager.exp_dir={exp}", *FROZEN, *overrides))
    return run_training(config, lambda _: None)


def test_val_loss_is_the_mean_of_the_first_batches(tmp_path: Path) -> None:
    """With lr 0 the weights never move, so the validation of the training stream's first
    two batches is the mean of the first two steps' losses, on one rank and on TP2 x DP4."""
    one = _run(tmp_path / "one", *ONE)
    assert [s for s, _ in one["val_losses"]] == [2, 4]
    want = np.mean(one["losses"][:2])
    for _, value in one["val_losses"]:
        assert value == pytest.approx(want, rel=1e-6)
    records = read_metrics(str(tmp_path / "one" / "metrics.jsonl"))
    assert [r.get("val_loss") is not None for r in records] == [False, True, False, True]
    many = _run(tmp_path / "many")  # the example's TP2 x DP4 with sequence parallelism
    np.testing.assert_allclose([v for _, v in many["val_losses"]],
                               [v for _, v in one["val_losses"]], rtol=1e-5)


def test_tensorboard_reader_finds_the_scalars(tmp_path: Path) -> None:
    accumulator = pytest.importorskip(
        "tensorboard.backend.event_processing.event_accumulator",
        reason="TensorBoard's reader is the test extra that reads the event files back")
    exp = tmp_path / "exp"
    result = _run(exp, *ONE, "exp_manager.create_tensorboard_logger=true")
    events = accumulator.EventAccumulator(str(exp / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {"loss", "reduced_train_loss", "lr", "val_loss", "gradient_norm", "throughput",
            "consumed_samples"} <= tags
    assert [e.step for e in events.Scalars("loss")] == [1, 2, 3, 4]
    np.testing.assert_allclose([e.value for e in events.Scalars("loss")], result["losses"],
                               rtol=1e-6)
    assert [e.step for e in events.Scalars("val_loss")] == [2, 4]


def test_validation_without_data_is_refused(tmp_path: Path) -> None:
    r = neuronx_cc("train", str(GPT), "--quiet", f"exp_manager.exp_dir={tmp_path / 'exp'}",
                   "trainer.val_check_interval=2", "trainer.limit_val_batches=1",
                   "--dry-run")
    assert_one_line_error(r, "[NCC_ETRN001] data.val_dir:", "validation every 2 steps")
    assert r.returncode == 2 and not (tmp_path / "exp").exists()
