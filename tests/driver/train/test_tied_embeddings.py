"""The GPT example as NxD ships it: the head tied to the embedding
(`model.share_embeddings_and_output_weights: True`) trains on its TP2 x DP4 layout, and on
TP2 x PP2 x DP2 (a copy of the table on the first and the last stage, their gradients summed
over the pair, as Megatron does), to the losses of one rank."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO

GPT = REPO / "examples" / "train" / "megatron_gpt_tiny.yaml"
ONE = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
       "distributed_strategy.zero1=false", "distributed_strategy.sequence_parallel=false")


def _losses(tmp: Path, *overrides: str) -> list[float]:
    config = load_config(str(GPT), (f"exp_manager.exp_dir={tmp}", "trainer.max_steps=4",
                                    "exp_manager.resume_if_exists=false", *overrides))
    assert config.model is not None and config.model.share_embeddings_and_output_weights
    return run_training(config, lambda _: None)["losses"]


def test_tied_gpt_trains_the_same_on_its_layout_and_one_rank(tmp_path: Path) -> None:
    many = _losses(tmp_path / "many")
    one = _losses(tmp_path / "one", *ONE)
    np.testing.assert_allclose(many, one, rtol=1e-4)
    assert many[-1] < many[0]


@pytest.mark.parametrize("precision", ["fp32", "mixed_precisionSR"])
def test_tied_embeddings_across_pipeline_stages_match_one_rank(tmp_path: Path,
                                                               precision: str) -> None:
    """fp32 to one rank's losses; with stochastic rounding the copies must round alike, or
    the two stages' tables drift apart and the losses with them."""
    common = (f"precision.type={precision}", "model.encoder_seq_length=16")
    staged = _losses(tmp_path / "pp", "trainer.devices=8", *common,
                     "distributed_strategy.pipeline_model_parallel_size=2",
                     "exp_manager.checkpoint_callback_params.every_n_train_steps=4")
    one = _losses(tmp_path / "one", *ONE, *common)
    np.testing.assert_allclose(staged, one, rtol=1e-5 if precision == "fp32" else 2e-3)
    step = tmp_path / "pp" / "checkpoints" / "step_4"
    for tp in (0, 1):  # the two copies of each TP slice are still equal
        with np.load(step / f"params_tp{tp}_pp0.npz") as first, \
                np.load(step / f"params_tp{tp}_pp1.npz") as last:
            np.testing.assert_array_equal(first["embed.tokens"], last["embed.tokens"])


def test_a_staged_tied_checkpoint_resumes_on_one_rank(tmp_path: Path) -> None:
    """Resharding takes one of the two copies: PP2's checkpoint continues on one rank as
    the uninterrupted one-rank run does."""
    exp = tmp_path / "pp"
    common = ("model.encoder_seq_length=16", "+model.optim.sched.max_steps=4",
              "exp_manager.checkpoint_callback_params.every_n_train_steps=2")
    _losses(exp, "trainer.devices=8", "distributed_strategy.pipeline_model_parallel_size=2",
            "trainer.max_steps=2", *common)
    config = load_config(str(GPT), (f"exp_manager.exp_dir={exp}", "trainer.max_steps=4",
                                    "exp_manager.resume_if_exists=true", *ONE, *common))
    resumed = run_training(config, lambda _: None)["losses"]
    one = _losses(tmp_path / "one", *ONE, *common)
    np.testing.assert_allclose(resumed, one[2:], rtol=1e-5)
