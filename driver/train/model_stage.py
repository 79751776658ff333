"""The built-in decoder (`compiler.decoder`) as the engine's model provider.

`decoder_builder(model, seed, distributed, data)` returns the engine's `StageBuilder`: for
each rank's `StagePlan` the decoder's stage module, and the rank's slices of the full
weights drawn once from `seed` (so every layout starts from the same numbers). Stages take
the layers `model.cut_after` gives (NxD's `pipeline_cuts`); else NxD's split of whole
layers (`cuts.nxd_layer_split`), or with `model.pipeline_split: flops` (nxcc's own key) the
split of balanced FLOPs over layer pieces (`cuts.balanced_cuts`).

The global gradient norm counts each element of the model once: a replicated parameter on
TP rank 0 only, and in a fused weight whose key/value heads are repeated `kv_replicator`
times only the copy of the lowest rank holding it (the decoder's `owned_masks`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nxcc.backend.program.memory_plan import peak_activation_bytes
from nxcc.compiler.decoder import (
    DecoderConfig,
    DecoderError,
    build_stage,
    init_full_weights,
    model_specs,
    owned_masks,
    shard_weights,
    stage_specs,
)
from nxcc.compiler.decoder import StagePlan as DecoderPlan
from nxcc.compiler.decoder.config import PIECES, PIECES_PER_LAYER, chunks_fit
from nxcc.compiler.decoder.weights import ParamSpec, join_parts, unshard
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
    stage_pieces,
)
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.stage import StageBuild, StageBuilder, StagePlan

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


#: How a pipeline's stages were chosen (`Pipeline.split`), as the dry-run names it.
SPLITS = {"balanced": "balanced by FLOPs", "nxd": "NxD's split: whole layers, any remainder "
          "on the last stages", "pipeline_cuts": "model.pipeline_cuts"}


@dataclass(frozen=True)
class Pipeline:
    """The stages' pieces (`cuts`: the first piece of each stage but the first; piece
    PIECES_PER_LAYER * i + j is layer i's `PIECES[j]`), whether the cost model chose them,
    and each stage's FLOPs per micro-batch (None with PP = 1). `split` says how the cuts
    were chosen (a key of `SPLITS`)."""

    cuts: tuple[int, ...]
    automatic: bool
    flops: tuple[int, ...] | None
    split: str = "nxd"

    def pieces(self, stage: int, num_layers: int) -> range:
        return stage_pieces(self.cuts, num_layers)[stage]

    @property
    def cut_after(self) -> tuple[int, ...] | None:
        """The last layer of each stage but the last, as `pipeline_cuts` name them; None
        when a cut falls inside a layer."""
        if any(c % PIECES_PER_LAYER for c in self.cuts):
            return None
        return tuple(c // PIECES_PER_LAYER - 1 for c in self.cuts)

    def describe(self, num_layers: int) -> str:
        text = " | ".join(pieces_text(self.pieces(s, num_layers))
                          for s in range(len(self.cuts) + 1))
        how = SPLITS[self.split]
        if self.flops:
            text += " (FLOPs per micro-batch " + ", ".join(f"{f:,}" for f in self.flops) + ")"
        return f"pipeline stages ({how}): {text}"


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
    if stages == 1:
        return Pipeline((), False, None)
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
                            "balanced")
        else:
            cuts, split = split_cuts(nxd_layer_split(model.num_layers, stages)), "nxd"
        per_stage = tuple(stage_flops(cfg, cuts, *shape)) if flops else None
    except DecoderError as exc:
        raise TrainConfigError("model", str(exc)) from None
    return Pipeline(cuts, not model.cut_after, per_stage, split)


def recompute_mode(model: ModelConfig) -> str:
    """The decoder's recomputation mode for `activations_checkpoint_granularity`."""
    return RECOMPUTE.get(model.activations_checkpoint_granularity, "none")


def decoder_plan(model: ModelConfig, distributed: DistributedConfig, pipeline: Pipeline,
                 plan: StagePlan) -> DecoderPlan:
    """The decoder's plan of the rank `plan` describes: its stage's pieces, its TP rank."""
    pieces = pipeline.pieces(plan.stage, model.num_layers)
    return DecoderPlan(
        tp_rank=plan.tp_rank, tp_size=plan.tp_size, sequence_parallel=plan.sequence_parallel,
        kv_replicator=distributed.kv_replicator, first_piece=pieces.start,
        last_piece=pieces.stop, has_embedding=plan.first, has_head=plan.last,
        recompute=recompute_mode(model), micro_batch=plan.micro_batch,
        seq_length=plan.seq_length)


def decoder_builder(model: ModelConfig, seed: int, distributed: DistributedConfig,
                    data: DataConfig) -> tuple[StageBuilder, Pipeline]:
    """The builder of every rank's stage, and the pipeline's split."""
    cfg = decoder_config(model)  # tied embeddings with PP > 1 were refused at config load
    pipeline = plan_pipeline(model, distributed, data)
    full: dict[str, np.ndarray] = {}
    lock = threading.Lock()

    def build(plan: StagePlan) -> StageBuild:
        dplan = decoder_plan(model, distributed, pipeline, plan)
        with lock:
            if not full:
                full.update(init_full_weights(cfg, seed))
        try:
            module = build_stage(cfg, dplan)
        except DecoderError as exc:
            raise TrainConfigError("model", str(exc)) from None
        mine = shard_weights(full, cfg, dplan)
        specs = stage_specs(cfg, dplan)
        params = [(s.name, mine[s.name]) for s in specs]
        masks = {n: m.astype(np.float32) for n, m in owned_masks(cfg, dplan).items()}
        peak = max(peak_activation_bytes(module, fn) for fn in module.functions)
        return StageBuild(module, params, norm_masks=masks, peak_activation_bytes=peak,
                          extra={"slice": lambda whole: shard_weights(whole, cfg, dplan)})

    return build, pipeline


def decoder_unshard(model: ModelConfig
                    ) -> Callable[[str, list[list[np.ndarray]], int], np.ndarray]:
    """Join one tensor's pipeline parts and TP slices (as a layout with `kv_replicator`
    wrote them) into the whole tensor (`reshard.whole_state`)."""
    cfg = decoder_config(model)

    specs: dict[int, dict[str, ParamSpec]] = {}  # by kv_replicator, made once

    def join(name: str, parts: list[list[np.ndarray]], kv_replicator: int) -> np.ndarray:
        if kv_replicator not in specs:
            specs[kv_replicator] = {s.name: s for s in model_specs(cfg, kv_replicator)}
        spec = specs[kv_replicator][name]
        return unshard(spec, [join_parts(spec, stages) for stages in parts])

    return join
