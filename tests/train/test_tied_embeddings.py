"""The GPT example as NxD ships it: the head tied to the embedding
(`model.share_embeddings_and_output_weights: True`) trains on its TP2 x DP2 layout to the
losses of one rank; with pipeline stages the tie is refused naming the key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
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


def test_tied_embeddings_on_pipeline_stages_are_refused(tmp_path: Path) -> None:
    with pytest.raises(TrainConfigError, match="share_embeddings_and_output_weights"):
        load_config(str(GPT), (f"exp_manager.exp_dir={tmp_path}", "trainer.devices=8",
                               "distributed_strategy.pipeline_model_parallel_size=2"))
