"""Automatic pipeline cuts: the cost model's stage FLOPs are the programs' own, the split is
the best one, a 6-layer model in 3 stages is balanced within 10%, and manual cuts are
honoured."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nxcc.compiler.decoder import DecoderConfig
from nxcc.compiler.decoder import StagePlan as DecoderPlan
from nxcc.driver.train.config import load_config
from nxcc.driver.train.cuts import _flops, balanced_cuts, per_stage_flops, stage_costs
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"


def _cfg(layers: int = 6, vocab: int = 256) -> DecoderConfig:
    return DecoderConfig("llama", num_layers=layers, hidden_size=64, num_attention_heads=4,
                         num_kv_heads=2, ffn_hidden_size=176, vocab_size=vocab,
                         max_position_embeddings=32)


def _splits(layers: int, stages: int) -> list[tuple[int, ...]]:
    return [c for c in itertools.combinations(range(layers - 1), stages - 1)]


@pytest.mark.parametrize("recompute", ["none", "full"])
def test_costs_are_the_programs_flops(recompute: str) -> None:
    cfg = _cfg()
    costs = stage_costs(cfg, 1, 32, recompute)
    for cuts in [(1, 3), (0, 4), (3, 4)]:
        ends = [c + 1 for c in cuts] + [6]
        starts = [0, *ends[:-1]]
        real = [_flops(cfg, DecoderPlan(first_layer=a, last_layer=b, has_embedding=i == 0,
                                        has_head=i == 2, recompute=recompute,
                                        micro_batch=1, seq_length=32))
                for i, (a, b) in enumerate(zip(starts, ends, strict=True))]
        assert per_stage_flops(costs, cuts, 6) == real


@pytest.mark.parametrize(("vocab", "recompute", "stages"),
                         [(256, "full", 3), (512, "none", 3), (2048, "none", 3),
                          (256, "none", 2), (256, "none", 6)])
def test_the_split_is_the_best(vocab: int, recompute: str, stages: int) -> None:
    costs = stage_costs(_cfg(vocab=vocab), 1, 32, recompute)
    chosen = balanced_cuts(costs, 6, stages)
    best = min(max(per_stage_flops(costs, c, 6)) for c in _splits(6, stages))
    assert max(per_stage_flops(costs, chosen, 6)) == best


def test_six_layers_in_three_stages_within_ten_percent() -> None:
    costs = stage_costs(_cfg(), 1, 32, "full")
    flops = per_stage_flops(costs, balanced_cuts(costs, 6, 3), 6)
    assert max(flops) <= 1.1 * min(flops)


def test_a_run_uses_automatic_or_manual_cuts(tmp_path: Path) -> None:
    common = (f"exp_manager.exp_dir={tmp_path}", "model.num_layers=6", "trainer.max_steps=2",
              "exp_manager.resume_if_exists=false", "trainer.devices=6",
              "distributed_strategy.tensor_model_parallel_size=1",
              "distributed_strategy.pipeline_model_parallel_size=3",
              "distributed_strategy.zero1=false", "model.encoder_seq_length=16",
              "data.global_batch_size=4", "model.activations_checkpoint_granularity=full")
    lines: list[str] = []
    auto = run_training(load_config(str(EXAMPLE), common), lines.append)
    assert auto["pipeline_cut_after"] == [1, 3]
    assert any(line.startswith("pipeline stages (balanced by FLOPs): layers 0-1 | layers 2-3 | "
                               "layers 4-5")
               for line in lines)
    manual = run_training(load_config(str(EXAMPLE), (*common, "model.pipeline_cuts="
                                                     "[model.layers.0,model.layers.4]")),
                          lines.append)
    assert manual["pipeline_cut_after"] == [0, 4]
    assert manual["losses"] == pytest.approx(auto["losses"], rel=1e-5)
