"""Automatic pipeline cuts: the cost model's stage FLOPs are the programs' own, the split is
the best one over half layers, a 6-layer model in 3 stages is balanced within 10% (with
each recomputation mode, for several shapes), and manual cuts are honoured."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from nxcc.compiler.decoder import DecoderConfig
from nxcc.compiler.decoder import StagePlan as DecoderPlan
from nxcc.driver.train.config import load_config
from nxcc.driver.train.cuts import (
    _flops,
    balanced_cuts,
    per_stage_flops,
    stage_blocks,
    stage_costs,
)
from nxcc.driver.train.run import run_training
from tests.cli_helpers import REPO

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"


def _cfg(layers: int = 6, vocab: int = 256, hidden: int = 64, ffn: int = 176,
         family: str = "llama") -> DecoderConfig:
    return DecoderConfig(family, num_layers=layers, hidden_size=hidden, num_attention_heads=4,
                         num_kv_heads=2 if family == "llama" else 4, ffn_hidden_size=ffn,
                         vocab_size=vocab, max_position_embeddings=32)


def _splits(layers: int, stages: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(1, 2 * layers), stages - 1))


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_costs_are_the_programs_flops(recompute: str) -> None:
    cfg = _cfg()
    costs = stage_costs(cfg, 1, 32, recompute)
    for cuts in [(4, 8), (2, 10), (3, 9), (7, 8), (1, 11)]:
        real = [_flops(cfg, DecoderPlan(first_block=r.start, last_block=r.stop,
                                        has_embedding=i == 0, has_head=i == 2,
                                        recompute=recompute, micro_batch=1, seq_length=32))
                for i, r in enumerate(stage_blocks(cuts, 6))]
        assert per_stage_flops(costs, cuts, 6) == real, cuts


@pytest.mark.parametrize(("vocab", "recompute", "stages"),
                         [(256, "full", 3), (512, "none", 3), (2048, "none", 3),
                          (256, "none", 2), (256, "selective", 6)])
def test_the_split_is_the_best(vocab: int, recompute: str, stages: int) -> None:
    costs = stage_costs(_cfg(vocab=vocab), 1, 32, recompute)
    chosen = balanced_cuts(costs, 6, stages)
    best = min(max(per_stage_flops(costs, c, 6)) for c in _splits(6, stages))
    assert max(per_stage_flops(costs, chosen, 6)) == best


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("shape", [
    {"vocab": 64}, {"hidden": 128, "ffn": 344, "vocab": 128},
    {"family": "gpt", "ffn": 256, "vocab": 64}])
def test_six_layers_in_three_stages_within_ten_percent(recompute: str, shape: dict) -> None:
    """With a head lighter than the imbalance allowed (here under a tenth of a layer)."""
    costs = stage_costs(_cfg(**shape), 1, 32, recompute)
    flops = per_stage_flops(costs, balanced_cuts(costs, 6, 3), 6)
    assert max(flops) <= 1.1 * min(flops), flops


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("shape", [{"vocab": 512}, {"hidden": 128, "ffn": 344, "vocab": 1024}])
def test_half_layers_lighten_the_largest_stage(recompute: str, shape: dict) -> None:
    """A head of half a layer or more: cutting inside a layer beats every whole-layer split
    by at least 5% on the largest stage."""
    costs = stage_costs(_cfg(**shape), 1, 32, recompute)
    chosen = balanced_cuts(costs, 6, 3)
    assert any(c % 2 for c in chosen)
    whole = min(max(per_stage_flops(costs, c, 6)) for c in _splits(6, 3)
                if not any(b % 2 for b in c))
    assert max(per_stage_flops(costs, chosen, 6)) * 1.05 <= whole


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
