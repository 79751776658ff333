"""Resuming under another layout: a checkpoint's shards made whole and cut for the new
ranks (`driver/train/reshard.py`) continue the run with the losses of an uninterrupted one,
from TP2 x PP2 x DP2 (SP, ZeRO-1) to one rank and back, from pipeline stages cut inside
layers to one rank and back, with the f32 master copy of mixed precision, and for the ONNX
model between DP degrees."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"
ONNX = REPO / "examples" / "train" / "onnx_lm.yaml"
ONE = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
       "distributed_strategy.pipeline_model_parallel_size=1",
       "distributed_strategy.zero1=false", "distributed_strategy.sequence_parallel=false")
EVERY3 = ("exp_manager.checkpoint_callback_params.every_n_train_steps=3",)
COMMON = ("model.encoder_seq_length=16", "model.optim.sched.max_steps=20", *EVERY3)


def _run(example: Path, exp: Path, steps: int, *overrides: str, fresh: bool) -> list[float]:
    common = COMMON if example == EXAMPLE else EVERY3
    config = load_config(str(example), (
        f"exp_manager.exp_dir={exp}", f"trainer.max_steps={steps}",
        f"exp_manager.resume_if_exists={'false' if fresh else 'true'}", *common, *overrides))
    return run_training(config, lambda _: None)["losses"]


# 6 layers on TP2 x PP3: the cost model cuts inside layers, splitting projections' columns
PP3 = ("trainer.devices=6", "distributed_strategy.pipeline_model_parallel_size=3",
       "++model.pipeline_split=flops")


@pytest.mark.parametrize(("first", "then", "extra"), [
    ((), ONE, ()), (ONE, (), ()), ((), ("trainer.devices=4",), ("precision.type=mixed_precision",)),
    (PP3, ONE, ("model.num_layers=6",)), (ONE, PP3, ("model.num_layers=6",))])
@pytest.mark.usefixtures("any_even_ranks")  # layouts of 4 and 6 ranks
def test_another_layout_continues_the_run(tmp_path: Path, first: tuple, then: tuple,
                                         extra: tuple) -> None:
    whole = _run(EXAMPLE, tmp_path / "whole", 6, *first, *extra, fresh=True)
    _run(EXAMPLE, tmp_path / "run", 3, *first, *extra, fresh=True)
    rest = _run(EXAMPLE, tmp_path / "run", 6, *then, *extra, fresh=False)
    np.testing.assert_allclose(rest, whole[3:], rtol=1e-6)


def test_the_onnx_model_changes_dp_degree(tmp_path: Path) -> None:
    whole = _run(ONNX, tmp_path / "whole", 6, fresh=True)
    _run(ONNX, tmp_path / "run", 3, fresh=True)  # DP2, ZeRO-1
    rest = _run(ONNX, tmp_path / "run", 6, "trainer.devices=1", fresh=False)
    np.testing.assert_allclose(rest, whole[3:], rtol=1e-6)


def test_another_precision_is_still_refused(tmp_path: Path) -> None:
    _run(EXAMPLE, tmp_path, 3, *ONE, fresh=True)
    with pytest.raises(TrainConfigError, match="precision.type fp32, this run is bf16SR"):
        _run(EXAMPLE, tmp_path, 6, *ONE, "precision.type=bf16SR", fresh=False)
