"""Automatic pipeline cuts: the cost model's stage FLOPs are the programs' own, the split is
the best one over layer pieces (the largest stage least, then the lightest heaviest), a
6-layer model in 3 stages is balanced within 10% (with each recomputation mode, for several
shapes and heads up to nearly a layer), and manual cuts are honoured. Layer counts the
stages do not divide are split as NxD splits them, and train to the one-stage losses."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.config_types import TrainConfig
from nxcc.driver.train.cuts import (
    _flops,
    balanced_cuts,
    nxd_layer_split,
    per_stage_flops,
    split_cuts,
    stage_costs,
    stage_flops,
    stage_pieces,
)
from nxcc.driver.train.describe import describe
from nxcc.driver.train.model_stage import pieces_text
from nxcc.driver.train.prepare import prepare_job
from nxcc.driver.train.run import run_training
from nxcc.nxd.models.decoder import DecoderConfig
from nxcc.nxd.models.decoder import StagePlan as DecoderPlan
from nxcc.nxd.models.decoder.config import CHUNKS, MLP_FIRST, PIECES_PER_LAYER, QKV_FIRST
from tests.cli_helpers import REPO

EXAMPLE = REPO / "examples" / "train" / "hf_llama_tiny_gqa.yaml"
L = PIECES_PER_LAYER


def _cfg(layers: int = 6, vocab: int = 256, hidden: int = 64, ffn: int = 176,
         family: str = "llama") -> DecoderConfig:
    return DecoderConfig(family, num_layers=layers, hidden_size=hidden, num_attention_heads=4,
                         num_kv_heads=2 if family == "llama" else 4, ffn_hidden_size=ffn,
                         vocab_size=vocab, max_position_embeddings=32)


def _splits(layers: int, stages: int) -> list[tuple[int, ...]]:
    return list(itertools.combinations(range(1, L * layers), stages - 1))


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_costs_are_the_programs_flops(recompute: str) -> None:
    cfg = _cfg()
    costs = stage_costs(cfg, 1, 32, recompute)
    for cuts in [(2 * L, 4 * L), (3, 5 * L + 7), (L + 7, 2 * L + 1), (16, 17), (1, 6 * L - 1),
                 (4 * L + 5, 4 * L + 6), (MLP_FIRST, 3 * L + QKV_FIRST + 2)]:
        real = [_flops(cfg, DecoderPlan(first_piece=r.start, last_piece=r.stop,
                                        has_embedding=i == 0, has_head=i == 2,
                                        recompute=recompute, micro_batch=1, seq_length=32))
                for i, r in enumerate(stage_pieces(cuts, 6))]
        assert per_stage_flops(costs, cuts, 6) == real, cuts


@pytest.mark.parametrize(("layers", "vocab", "recompute", "stages"),
                         [(6, 256, "full", 3), (6, 512, "none", 3), (6, 2048, "none", 3),
                          (6, 256, "none", 2), (3, 256, "selective", 4)])
def test_the_split_is_the_best(layers: int, vocab: int, recompute: str, stages: int) -> None:
    """The largest stage is the least of any split; among such splits the lightest stage
    is the heaviest."""
    costs = stage_costs(_cfg(layers=layers, vocab=vocab), 1, 32, recompute)
    chosen = per_stage_flops(costs, balanced_cuts(costs, layers, stages), layers)
    every = [per_stage_flops(costs, c, layers) for c in _splits(layers, stages)]
    least = min(max(f) for f in every)
    assert max(chosen) == least
    assert min(chosen) == max(min(f) for f in every if max(f) == least)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("shape", [
    {}, {"vocab": 64}, {"vocab": 1024}, {"hidden": 128, "ffn": 344, "vocab": 1024},
    {"family": "gpt", "ffn": 256, "vocab": 64}, {"family": "gpt", "ffn": 256, "vocab": 512}])
def test_six_layers_in_three_stages_within_ten_percent(recompute: str, shape: dict) -> None:
    """The example's shape ({}: the head a third of a layer) and others, heads from a
    twentieth of a layer to nearly a whole one."""
    costs = stage_costs(_cfg(**shape), 1, 32, recompute)
    flops = per_stage_flops(costs, balanced_cuts(costs, 6, 3), 6)
    assert max(flops) <= 1.1 * min(flops), flops


@pytest.mark.parametrize("recompute", ["none", "full"])
@pytest.mark.parametrize("shape", [{}, {"hidden": 128, "ffn": 344, "vocab": 1024}])
def test_cuts_inside_layers_lighten_the_largest_stage(recompute: str, shape: dict) -> None:
    """A head of a third of a layer or more: cutting inside layers beats every whole-layer
    split by at least 5% on the largest stage."""
    costs = stage_costs(_cfg(**shape), 1, 32, recompute)
    chosen = balanced_cuts(costs, 6, 3)
    assert any(c % L for c in chosen)
    whole = min(max(per_stage_flops(costs, c, 6)) for c in _splits(6, 3)
                if not any(b % L for b in c))
    assert max(per_stage_flops(costs, chosen, 6)) * 1.05 <= whole


def test_no_cut_between_chunks_when_told() -> None:
    costs = stage_costs(_cfg(), 1, 32, "none")
    inner = {QKV_FIRST + c for c in range(1, CHUNKS)} | {MLP_FIRST + c for c in range(1, CHUNKS)}
    assert any(c % L in inner for c in balanced_cuts(costs, 6, 3))
    assert not any(c % L in inner for c in balanced_cuts(costs, 6, 3, inside_projections=False))


def test_pieces_text() -> None:
    assert pieces_text(range(2 * L, 4 * L)) == "layers 2-3"
    assert pieces_text(range(L, 2 * L)) == "layer 1"
    assert pieces_text(range(2 * L + QKV_FIRST + 1, 4 * L + MLP_FIRST + 2)) == \
        "layers 2.attn.qkv.1-4.mlp.1"
    assert pieces_text(range(5 * L + 4, 5 * L + 5)) == "layer 5.attn.core"


@pytest.mark.usefixtures("any_even_ranks")  # 6 ranks
def test_a_run_uses_automatic_or_manual_cuts(tmp_path: Path) -> None:
    common = (f"exp_manager.exp_dir={tmp_path}", "model.num_layers=6", "trainer.max_steps=2",
              "exp_manager.resume_if_exists=false", "trainer.devices=6",
              "distributed_strategy.tensor_model_parallel_size=1",
              "distributed_strategy.pipeline_model_parallel_size=3",
              "distributed_strategy.zero1=false", "model.encoder_seq_length=16",
              "data.global_batch_size=4", "model.activations_checkpoint_granularity=full",
              "++model.pipeline_split=flops")
    lines: list[str] = []
    auto = run_training(load_config(str(EXAMPLE), common), lines.append)
    assert auto["pipeline_cut_after"] is None  # the cost model cuts inside layers here
    cuts = tuple(auto["pipeline_cut_pieces"])
    text = " | ".join(pieces_text(r) for r in stage_pieces(cuts, 6))
    assert any(line.startswith(f"pipeline stages (balanced by FLOPs): {text} (FLOPs")
               for line in lines), text
    manual = run_training(load_config(str(EXAMPLE), (*common, "+model.pipeline_cuts="
                                                     "[model.layers.0,model.layers.4]")),
                          lines.append)
    assert manual["pipeline_cut_after"] == [0, 4]
    assert manual["losses"] == pytest.approx(auto["losses"], rel=1e-5)


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
def test_stage_flops_are_the_cost_models(recompute: str) -> None:
    cfg = _cfg(layers=5)
    costs = stage_costs(cfg, 1, 32, recompute)
    for split in [(1, 2, 2), (2, 3), (1, 1, 1, 2)]:
        cuts = split_cuts(split)
        assert stage_flops(cfg, cuts, 1, 32, recompute) == per_stage_flops(costs, cuts, 5)


def test_layers_the_stages_do_not_divide_are_split_as_nxd_splits_them() -> None:
    split = nxd_layer_split(126, 32)  # NxD's Llama-3.1-405B config
    assert split == (3, 3) + (4,) * 30 and sum(split) == 126
    assert nxd_layer_split(5, 3) == (1, 2, 2)
    assert split_cuts((1, 2, 2)) == (L, 3 * L)
    with pytest.raises(ValueError, match="2 layers cannot make 3 stages"):
        nxd_layer_split(2, 3)


def _dry_run(config: TrainConfig) -> dict[str, Any]:
    """What `train --dry-run --json` prints for `config`."""
    return describe(prepare_job(config, lambda _: None, write_cache=False))


@pytest.mark.usefixtures("any_even_ranks")  # PP3: 6 ranks
def test_the_default_split_is_nxds_and_flops_balances_over_pieces(tmp_path: Path) -> None:
    common = (f"exp_manager.exp_dir={tmp_path}", "model.num_layers=6", "trainer.devices=6",
              "distributed_strategy.tensor_model_parallel_size=1",
              "distributed_strategy.pipeline_model_parallel_size=3",
              "model.encoder_seq_length=16", "data.global_batch_size=4")
    nxd = _dry_run(load_config(str(EXAMPLE), common))["pipeline"]
    assert (nxd["split"], nxd["stages"]) == ("nxd", ["layers 0-1", "layers 2-3", "layers 4-5"])
    flops = _dry_run(load_config(str(EXAMPLE), (*common, "++model.pipeline_split=flops")))
    assert flops["pipeline"]["split"] == "balanced"
    assert flops["pipeline"]["line"].startswith("pipeline stages (balanced by FLOPs)")


def test_an_uneven_split_trains_and_the_dry_run_names_it(tmp_path: Path) -> None:
    common = (f"exp_manager.exp_dir={tmp_path}", "model.num_layers=5", "trainer.max_steps=2",
              "exp_manager.resume_if_exists=false", "trainer.devices=2",
              "distributed_strategy.tensor_model_parallel_size=1",
              "distributed_strategy.zero1=false", "model.encoder_seq_length=16",
              "data.global_batch_size=4")
    config = load_config(str(EXAMPLE), (*common,
                                        "distributed_strategy.pipeline_model_parallel_size=2"))
    info = _dry_run(config)
    assert info["pipeline"]["split"] == "nxd"
    assert info["pipeline"]["stages"] == ["layers 0-1", "layers 2-4"]
    assert "any remainder on the last stages): layers 0-1 | layers 2-4" in \
        info["pipeline"]["line"]
    two = run_training(config, lambda _: None)
    assert two["pipeline_cut_after"] == [1]
    one = run_training(load_config(str(EXAMPLE), (
        *common, "distributed_strategy.pipeline_model_parallel_size=1")), lambda _: None)
    assert two["losses"] == pytest.approx(one["losses"], rel=1e-5)
