"""The built-in decoder (`nxd.models.decoder`) as the engine's model provider.

`decoder_builder(model, seed, distributed, data)` returns the engine's `StageBuilder`: for
each rank's `StagePlan` the decoder's stage module, cut and differentiated as any model of
the primitives is (`model_build.stage_build`), and the rank's slices of the full weights
drawn once from `seed` (so every layout starts from the same numbers). Stages take the
layers `model.cut_after` gives (NxD's `pipeline_cuts`); else NxD's split of whole layers
(`cuts.nxd_layer_split`), or with `model.pipeline_split: flops` (nxcc's own key) the split
of balanced FLOPs over layer pieces (`cuts.balanced_cuts`).

The global gradient norm counts each element of the model once: a replicated parameter on
TP rank 0 only, in a fused weight whose key/value heads are repeated `kv_replicator` times
only the copy of the lowest rank holding it, and the tied embedding on the first stage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from nxcc.driver.train.config import DataConfig, DistributedConfig
from nxcc.driver.train.config_model import ModelConfig
from nxcc.driver.train.cuts import (
    balanced_cuts,
    layer_cuts,
    nxd_layer_split,
    per_stage_flops,
    split_cuts,
    stage_costs,
    stage_flops,
)
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.model_build import join_tensor, stage_build
from nxcc.driver.train.pipeline_plan import Pipeline
from nxcc.driver.train.stage import StageBuild, StageBuilder, StagePlan
from nxcc.nxd.models.decoder import (
    DecoderConfig,
    DecoderError,
    check_plan,
    init_full_weights,
    model_specs,
)
from nxcc.nxd.models.decoder import StagePlan as DecoderPlan
from nxcc.nxd.models.decoder.config import PIECES, PIECES_PER_LAYER, chunks_fit
from nxcc.nxd.models.decoder.trace import model_name, stage_range, traced

__all__ = ["Pipeline", "decoder_builder", "decoder_config", "decoder_plan", "decoder_unshard",
           "pieces_text", "plan_pipeline", "recompute_mode"]

RECOMPUTE = {None: "none", "none": "none", "selective": "selective", "full": "full"}


def decoder_config(model: ModelConfig) -> DecoderConfig:
    try:
        return DecoderConfig(
            model.family, num_layers=model.num_layers, hidden_size=model.hidden_size,
            num_attention_heads=model.num_attention_heads,
            ffn_hidden_size=model.ffn_hidden_size, vocab_size=model.vocab_size,
            max_position_embeddings=model.max_position_embeddings,
            num_kv_heads=model.num_kv_heads, rope_theta=model.rope_theta,
            norm_eps=model.layernorm_epsilon,
            tie_embeddings=model.share_embeddings_and_output_weights,
            sliding_window=model.sliding_window_size, biases=model.has_bias,
            **dict(zip(("position", "normalization", "activation"), model.architecture,
                       strict=False)))
    except DecoderError as exc:
        raise TrainConfigError("model", str(exc)) from None


def pieces_text(pieces: range) -> str:
    """`layers 2-3` for whole layers; a stage starting or ending inside a layer names the
    piece: `layers 2.attn.out-4.mlp.1` (from layer 2's attention output projection to the
    second quarter of layer 4's MLP, both included), `layer 5.attn.core`."""
    n = PIECES_PER_LAYER
    first, last = pieces.start, pieces.stop - 1
    a = f"{first // n}" + (f".{PIECES[first % n]}" if first % n else "")
    b = f"{last // n}" + (f".{PIECES[last % n]}" if last % n != n - 1 else "")
    return f"layer {a}" if a == b else f"layers {a}-{b}"


def plan_pipeline(model: ModelConfig, distributed: DistributedConfig, data: DataConfig,
                  flops: bool = True) -> Pipeline:
    """The stages' pieces: the configured cuts; else, with `pipeline_split: flops`, the
    balanced ones (the cost model builds a stage program per run of a layer's pieces:
    seconds at a real model's size); else NxD's split (`cuts.nxd_layer_split`). With
    `flops`, also each stage's FLOPs per micro-batch (for NxD's split and the configured
    cuts, from the stages' own programs). TrainConfigError when the decoder refuses the
    model."""
    stages = distributed.pipeline_model_parallel_size
    count = PIECES_PER_LAYER * model.num_layers
    if stages == 1:
        return Pipeline((), False, None, count, pieces_text, PIECES_PER_LAYER)
    cfg = decoder_config(model)
    shape = (data.micro_batch_size, data.seq_length, recompute_mode(model))
    try:
        if model.cut_after:
            cuts, split = layer_cuts(model.cut_after), "pipeline_cuts"
        elif model.pipeline_split == "flops":
            costs = stage_costs(cfg, *shape)
            inside = chunks_fit(cfg, distributed.tensor_model_parallel_size,
                                distributed.kv_replicator)
            cuts = balanced_cuts(costs, model.num_layers, stages, inside)
            return Pipeline(cuts, True, tuple(per_stage_flops(costs, cuts, model.num_layers)),
                            count, pieces_text, PIECES_PER_LAYER, "balanced")
        else:
            cuts, split = split_cuts(nxd_layer_split(model.num_layers, stages)), "nxd"
        per_stage = tuple(stage_flops(cfg, cuts, *shape)) if flops else None
    except DecoderError as exc:
        raise TrainConfigError("model", str(exc)) from None
    return Pipeline(cuts, not model.cut_after, per_stage, count, pieces_text, PIECES_PER_LAYER,
                    split)


def recompute_mode(model: ModelConfig) -> str:
    """The decoder's recomputation mode for `activations_checkpoint_granularity`."""
    return RECOMPUTE.get(model.activations_checkpoint_granularity, "none")


def decoder_plan(distributed: DistributedConfig, pipeline: Pipeline, model: ModelConfig,
                 plan: StagePlan) -> DecoderPlan:
    """The decoder's plan of the engine's rank `plan`."""
    pieces = pipeline.pieces(plan.stage)
    return DecoderPlan(
        tp_rank=plan.tp_rank, tp_size=plan.tp_size, sequence_parallel=plan.sequence_parallel,
        kv_replicator=distributed.kv_replicator, first_piece=pieces.start,
        last_piece=pieces.stop, has_embedding=plan.first, has_head=plan.last,
        recompute=recompute_mode(model), micro_batch=plan.micro_batch,
        seq_length=plan.seq_length)


def decoder_builder(model: ModelConfig, seed: int, distributed: DistributedConfig,
                    data: DataConfig, initial: dict[str, np.ndarray] | None = None
                    ) -> tuple[StageBuilder, Pipeline]:
    """The builder of every rank's stage, and the pipeline's split. The ranks slice the
    whole weights `initial` (a Hugging Face checkpoint's), else those drawn from `seed`."""
    cfg = decoder_config(model)
    pipeline = plan_pipeline(model, distributed, data)
    full: dict[str, np.ndarray] = {}
    lock = threading.Lock()

    def build(plan: StagePlan) -> StageBuild:
        dplan = decoder_plan(distributed, pipeline, model, plan)
        with lock:
            if not full:
                full.update(initial if initial is not None else init_full_weights(cfg, seed))
        try:
            check_plan(cfg, dplan)
        except DecoderError as exc:
            raise TrainConfigError("model", str(exc)) from None
        return stage_build(traced(cfg, dplan), stage_range(cfg, dplan), dplan.recompute,
                           full, "model", name=model_name(cfg, dplan))

    return build, pipeline


def decoder_unshard(model: ModelConfig
                    ) -> Callable[[str, list[list[np.ndarray]], int], np.ndarray]:
    """Join one tensor's pipeline parts and TP slices (as a layout with `kv_replicator`
    wrote them) into the whole tensor (`reshard.whole_state`)."""
    cfg = decoder_config(model)
    return join_tensor(lambda tp, kv: model_specs(cfg, kv))
