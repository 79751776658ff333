"""The decoder's parameters: names, full shapes, initial values and tensor-parallel slices.

Names (layer `i`; `[gpt]` only with biases, LayerNorm and learned positions):

    embed.tokens [V, H]                 vocabulary-parallel (rows split)
    embed.positions [P, H]  [gpt]       replicated
    layers.i.attn_norm.weight [H]       replicated (.bias [gpt])
    layers.i.attn.qkv [H, (n + 2 k) d]  column-parallel: q heads | k heads | v heads
    layers.i.attn.qkv_bias  [gpt]       split as qkv
    layers.i.attn.out [n d, H]          row-parallel (input features split)
    layers.i.attn.out_bias [H]  [gpt]   replicated
    layers.i.mlp_norm.weight [H]        replicated (.bias [gpt])
    layers.i.mlp.up [H, F]  [gpt]       column-parallel (.up_bias [F] split as it)
    layers.i.mlp.gate_up [H, 2F] [llama] column-parallel: gate | up, each split
    layers.i.mlp.down [F, H]            row-parallel (.down_bias [H] replicated [gpt])
    final_norm.weight [H]               replicated (.bias [gpt])
    head [H, V]                         vocabulary-parallel (columns split); none with tied
                                        embeddings: the head is embed.tokens transposed

(n attention heads, k key/value heads, d head size, F the MLP size, V the vocabulary, P the
positions; products are x @ W, weights [in, out].) A fused weight is split segment by
segment, so rank r holds its q heads, then its k and v heads, in that order. With
`kv_replicator` R > 1 key/value head h is held by ranks h R .. h R + R - 1.

These are the parameters the decoder's build function declares (`model.py`), read back from
it: `model_specs` the whole model's, `stage_specs` those a stage's programs take, in their
order. With tied embeddings and pipeline stages the last stage holds its own copy of
`embed.tokens` for the head (Megatron's `word_embeddings` on the last stage); a global sum
counts the first stage's (`owned_masks`). A stage that holds only some chunks of a layer's
q/k/v or MLP projection (a cut inside a layer, `config.PIECES`) holds those columns of each
rank's slice (`ParamSpec.part`); `join_parts` puts consecutive stages' parts back together.

`init_full_weights(cfg, seed)` draws the full model once (normal(0, 0.02) matrices and
embeddings, the residual projections `attn.out` and `mlp.down` scaled by 1/sqrt(2 L) as
GPT-2 and Megatron do, norm weights 1, biases 0), so every layout starts from the same
numbers; `shard_weights` slices it for one rank; `unshard_weights` puts the ranks' slices
(parameters, or gradients, whose replicated key/value copies the stage program already
summed) back together.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from nxcc.nxd import params as generic
from nxcc.nxd.models.decoder.config import DecoderConfig, StagePlan, check_plan
from nxcc.nxd.models.decoder.trace import stage_range, traced, traced_whole
from nxcc.nxd.params import ParamSpec, Segment, join_parts, shard, take_part, unshard
from nxcc.nxd.pipeline.partition import held_specs
from nxcc.nxd.pipeline.stage import owned_masks as generic_owned

#: The parameter two pipeline stages hold copies of (tied embeddings).
TIED = "embed.tokens"

__all__ = ["TIED", "ParamSpec", "Segment", "init_full_weights", "join_parts", "model_specs",
           "owned_masks", "parameter_count", "shard", "shard_weights", "stage_specs",
           "take_part", "unshard", "unshard_weights"]


def model_specs(cfg: DecoderConfig, kv_replicator: int = 1) -> list[ParamSpec]:
    """Every parameter of the model, embedding first, head last."""
    return traced_whole(cfg, kv_replicator).specs


def parameter_count(cfg: DecoderConfig) -> int:
    """How many parameters `model_specs(cfg)` has, counted without listing them: every
    layer has the same shapes, so the models of one and of two layers say what a layer
    adds, and a `num_layers` of any size costs nothing to count."""
    def total(layers: int) -> int:
        return sum(math.prod(s.shape) for s in model_specs(replace(cfg, num_layers=layers)))

    one = total(1)
    return one + (cfg.num_layers - 1) * (total(2) - one)


def stage_specs(cfg: DecoderConfig, plan: StagePlan) -> list[ParamSpec]:
    """The parameters of `plan`'s stage, in the order its programs take them."""
    check_plan(cfg, plan)
    return held_specs(traced(cfg, plan).model, stage_range(cfg, plan))


def init_full_weights(cfg: DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """The whole model's initial weights, drawn in `model_specs` order from `seed`."""
    return generic.init_full_weights(model_specs(cfg), seed, cfg.dtype)


def shard_weights(full: dict[str, np.ndarray], cfg: DecoderConfig, plan: StagePlan
                  ) -> dict[str, np.ndarray]:
    """The parameters of `plan`'s stage and rank, sliced from the full model's."""
    return {s.name: shard(s, full[s.name], plan.tp_rank, plan.tp_size)
            for s in stage_specs(cfg, plan)}


def unshard_weights(parts: Sequence[dict[str, np.ndarray]], cfg: DecoderConfig,
                    plan: StagePlan) -> dict[str, np.ndarray]:
    """The full values of `plan`'s stage parameters from the slices of tensor-parallel
    ranks 0 .. tp_size - 1 (in rank order; `plan.tp_rank` is not used). A parameter the
    stage holds a pipeline part of is left out (`join_parts` needs the other stages')."""
    if len(parts) != plan.tp_size:
        raise ValueError(f"{len(parts)} slices for tensor parallel size {plan.tp_size}")
    return {s.name: unshard(s, [p[s.name] for p in parts]) for s in stage_specs(cfg, plan)
            if s.part is None}


def owned_masks(cfg: DecoderConfig, plan: StagePlan) -> dict[str, np.ndarray]:
    """For each parameter of `plan`'s stage, the entries of its slice this rank counts in
    a sum over ranks that must count every entry once (`nxd.params.owned_mask`; none of
    the tied embedding's copy on the last stage: the first stage's counts)."""
    check_plan(cfg, plan)
    return generic_owned(traced(cfg, plan).model, stage_range(cfg, plan))
