"""The examples of models of your own (`examples/train/vit.yaml`, `t5.yaml`): each trains on
one rank and on TP2 x PP2 x DP2 under `mpiexec -n 8` with the same losses, and `--dry-run`
names its stages and groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.metrics import read_metrics
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO, neuronx_cc
from tests.mpi.test_mpi_runs import mpiexec, needs_mpi

EXAMPLES = REPO / "examples" / "train"
QUICK = ("trainer.max_steps=3", "exp_manager.resume_if_exists=false")
ONE_RANK = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
            "distributed_strategy.pipeline_model_parallel_size=1")
STAGES = {"vit": "pipeline stages (balanced by FLOPs): embed..blocks.1 | blocks.2..loss",
          "t5": "pipeline stages (balanced by FLOPs): encoder.embed..encoder.1 | "
                "decoder.0..loss"}


@pytest.mark.parametrize("name", ["vit", "t5"])
def test_dry_run_names_stages_and_groups(name: str) -> None:
    r = neuronx_cc("train", str(EXAMPLES / f"{name}.yaml"), "--dry-run")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert any(line.startswith(STAGES[name]) for line in lines), r.stdout
    assert "world: 8 ranks = 8 devices x 1 node(s); TP 2 x PP 2 x DP 2" in lines
    for kind, groups in (("TP", "[0,1] [2,3] [4,5] [6,7]"), ("DP", "[0,2] [1,3] [4,6] [5,7]"),
                         ("PP", "[0,4] [1,5] [2,6] [3,7]")):
        assert f"{kind} groups: {groups}" in lines


@needs_mpi
@pytest.mark.parametrize("name", ["vit", "t5"])
def test_one_rank_and_eight_processes_give_the_same_losses(name: str, tmp_path: Path) -> None:
    yaml = str(EXAMPLES / f"{name}.yaml")
    one = run_training(load_config(yaml, (*QUICK, *ONE_RANK,
                                          f"exp_manager.exp_dir={tmp_path / 'one'}")),
                       lambda _: None)
    r = mpiexec(8, "train", yaml, "--quiet", *QUICK, f"exp_manager.exp_dir={tmp_path / 'mpi'}",
                env={})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1].startswith("trained steps 1..3 on 8 ranks")
    losses = [rec["loss"] for rec in read_metrics(str(tmp_path / "mpi" / "metrics.jsonl"))]
    assert len(losses) == 3
    np.testing.assert_allclose(losses, one["losses"], rtol=1e-5)


def test_t5s_shared_embedding_stays_one_across_stages(tmp_path: Path) -> None:
    """The embedding the encoder's input, the decoder's input and the head read is held by
    both stages; with stochastic rounding of bf16 weights the copies stay equal."""
    config = load_config(str(EXAMPLES / "t5.yaml"), (
        *QUICK, "trainer.devices=2", "distributed_strategy.tensor_model_parallel_size=1",
        "precision.type=bf16SR", f"exp_manager.exp_dir={tmp_path}",
        "exp_manager.checkpoint_callback_params.every_n_train_steps=3"))
    run_training(config, lambda _: None)
    step = tmp_path / "checkpoints" / "step_3"
    first, last = np.load(step / "params_tp0_pp0.npz"), np.load(step / "params_tp0_pp1.npz")
    assert set(first.files) & set(last.files) == {"shared"}
    assert np.array_equal(first["shared"], last["shared"])
