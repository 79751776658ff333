"""Whole runs of the example Llama (4 layers, grouped-query attention) from its YAML file:
one rank against TP2 x PP2 x DP2 (ranks as threads), SP and ZeRO-1 memory figures, resume
equal to an uninterrupted run, metrics and checkpoints on disk."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.metrics import read_metrics
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"
ONE_RANK = ("trainer.devices=1", "distributed_strategy.tensor_model_parallel_size=1",
            "distributed_strategy.pipeline_model_parallel_size=1",
            "distributed_strategy.zero1=false", "distributed_strategy.sequence_parallel=false")
SMALL = ("model.encoder_seq_length=16", "exp_manager.resume_if_exists=false")


def _train(exp: Path, *overrides: str) -> tuple[dict, list[str]]:
    lines: list[str] = []
    config = load_config(str(EXAMPLE), (f"exp_manager.exp_dir={exp}", *SMALL, *overrides))
    return run_training(config, lines.append), lines


@pytest.fixture(scope="module")
def one_rank(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _train(tmp_path_factory.mktemp("one"), *ONE_RANK)[0]


def test_tp2_pp2_dp2_keeps_the_one_rank_curve(one_rank: dict, tmp_path: Path) -> None:
    eight, lines = _train(tmp_path)  # the example: TP2 x PP2 x DP2, SP and ZeRO-1 on
    assert (eight["world_size"], eight["steps"], one_rank["steps"]) == (8, 20, 20)
    np.testing.assert_allclose(eight["losses"], one_rank["losses"], rtol=1e-4)
    assert eight["losses"][-1] < eight["losses"][0] - 1.0  # it learns
    records = read_metrics(str(tmp_path / "metrics.jsonl"))
    assert [r["step"] for r in records] == list(range(1, 21))
    assert {"loss", "lr", "grad_norm", "tokens_per_s", "max_activation_bytes",
            "max_optimizer_state_bytes"} <= set(records[0])
    assert sum(line.startswith("memory rank ") for line in lines) == 8
    assert records[0]["memory_per_rank"] == eight["memory"] and len(eight["memory"]) == 8
    assert "memory_per_rank" not in records[1]
    assert lines[-1].startswith("trained steps 1..20 on 8 ranks")
    checkpoint = tmp_path / "checkpoints" / "step_20"
    names = sorted(p.name for p in checkpoint.iterdir())
    assert names == sorted(["checkpoint.json", *(f"params_tp{t}_pp{p}.npz" for t in range(2)
                                                 for p in range(2)),
                            *(f"optim_dp{d}_tp{t}_pp{p}.npz" for d in range(2)
                              for t in range(2) for p in range(2))])


def test_sp_and_zero1_keep_the_curve_and_lower_memory(one_rank: dict, tmp_path: Path) -> None:
    steps = ("trainer.max_steps=3", "model.optim.sched.max_steps=20")
    plain, _ = _train(tmp_path / "plain", "distributed_strategy.zero1=false",
                      "distributed_strategy.sequence_parallel=false", *steps)
    zero, _ = _train(tmp_path / "zero1", "distributed_strategy.sequence_parallel=false",
                     *steps)
    sp, _ = _train(tmp_path / "sp", "distributed_strategy.zero1=false", *steps)
    for run in (plain, zero, sp):
        np.testing.assert_allclose(run["losses"], one_rank["losses"][:3], rtol=1e-4)

    def peak(run: dict, key: str) -> int:
        return max(row[key] for row in run["memory"])

    assert peak(zero, "optimizer_state_bytes") * 2 == peak(plain, "optimizer_state_bytes")
    assert peak(sp, "activation_bytes") < peak(plain, "activation_bytes")
    assert peak(sp, "optimizer_state_bytes") == peak(plain, "optimizer_state_bytes")
    assert peak(plain, "parameter_bytes") < max(r["parameter_bytes"]
                                                for r in one_rank["memory"])


def test_resume_gives_the_losses_of_an_uninterrupted_run(tmp_path: Path) -> None:
    fixed = ("model.optim.sched.max_steps=6", "exp_manager.checkpoint_callback_params."
             "every_n_train_steps=3", "trainer.max_steps=6")
    whole, _ = _train(tmp_path / "whole", *fixed)
    # interrupted after step 4 (the checkpoint of step 3 committed, step 4 logged past it)
    _train(tmp_path / "cut", *fixed, "trainer.max_steps=4")
    resumed, lines = _train(tmp_path / "cut", *fixed, "exp_manager.resume_if_exists=true")
    assert resumed["first_step"] == 4 and resumed["losses"] == whole["losses"][3:]
    assert lines[-1].startswith("trained steps 4..6")
    records = read_metrics(str(tmp_path / "cut" / "metrics.jsonl"))
    assert [r["loss"] for r in records] == whole["losses"]
    manifest = json.loads((tmp_path / "cut" / "checkpoints" / "step_6" / "checkpoint.json")
                          .read_text())
    assert manifest["data"]["step"] == 6 and manifest["layout"]["dp"] == 2
    again, lines = _train(tmp_path / "cut", *fixed, "exp_manager.resume_if_exists=true")
    assert again["steps"] == 0
    assert lines[-1] == "nothing to train: resumed at step 6, and trainer.max_steps is 6"


def test_replicated_kv_heads_counted_once_in_the_norm(one_rank: dict, tmp_path: Path) -> None:
    run, _ = _train(tmp_path, "trainer.max_steps=2", "model.optim.sched.max_steps=20",
                    "distributed_strategy.tensor_model_parallel_size=4",
                    "distributed_strategy.pipeline_model_parallel_size=1",
                    "distributed_strategy.kv_replicator=2")
    np.testing.assert_allclose(run["grad_norms"], one_rank["grad_norms"][:2], rtol=1e-5)
    np.testing.assert_allclose(run["losses"], one_rank["losses"][:2], rtol=1e-5)


def test_full_recomputation_halves_peak_activations_with_the_same_curve(
        one_rank: dict, tmp_path: Path) -> None:
    steps = ("trainer.max_steps=2", "model.optim.sched.max_steps=20")
    runs = {g: _train(tmp_path / g, *ONE_RANK, *steps,
                      f"model.activations_checkpoint_granularity={g}")[0]
            for g in ("null", "selective", "full")}
    peak = {g: max(row["activation_bytes"] for row in run["memory"]) for g, run in runs.items()}
    assert peak["null"] >= 2 * peak["full"], peak
    assert peak["full"] < peak["selective"] < peak["null"], peak
    for run in runs.values():
        np.testing.assert_allclose(run["losses"], one_rank["losses"][:2], rtol=1e-4)
