"""The built-in decoder: a GPT- or Llama-style transformer built from the parallel
primitives of `nxcc.nxd`, per rank.

    cfg = DecoderConfig("llama", num_layers=4, hidden_size=64, num_attention_heads=4,
                        num_kv_heads=2, ffn_hidden_size=128, vocab_size=256,
                        max_position_embeddings=64)
    plan = StagePlan(tp_rank=r, tp_size=2, first_layer=0, last_layer=4, micro_batch=2,
                     seq_length=32)                 # or first_piece/last_piece (PIECES)
    full = init_full_weights(cfg, seed)             # the whole model, by name
    mine = shard_weights(full, cfg, plan)           # this rank's slices, by name
    module = build_stage(cfg, plan)                 # this rank's programs
    fb = program(module, "forward_backward")        # one program, ready to compile

`decoder_model(cfg, seq)` is the model's build function (`model.py`), cut and differentiated
by `nxd.pipeline` like any model's. Program signatures (P = the stage's parameters in
`stage_specs(cfg, plan)` order, each the rank's slice, named as in `weights.py`; tokens and
labels s32 [micro_batch, seq_length]; x [micro_batch, seq_length (/ TP with sequence
parallelism), hidden] in the model dtype at a cut between layers or between a layer's
attention and MLP; at a cut inside a layer, a vector packing what the next piece reads,
`nxd.pipeline.handoff`):

- a stage with the embedding and the head (the only stage):
  ``forward_backward(*P, tokens, labels) -> (loss_sum, token_count, *grads)``
- a first stage: ``forward(*P, tokens) -> (x_out, *stash)`` and
  ``backward(*P, tokens, *stash, g_out) -> (*grads)``
- a middle stage: ``forward(*P, x_in) -> (x_out, *stash)`` and
  ``backward(*P, x_in, *stash, g_out) -> (g_in, *grads)``
- a last stage: ``forward_backward(*P, x_in, labels) -> (loss_sum, token_count, g_in,
  *grads)``

The stash is what the backward reads of the forward (`passes.autodiff.stash`), as the
recomputation policy leaves it. `loss_sum` is the sum over positions whose label is not
-100 of the cross-entropy and `token_count` the number of those positions (both float
scalars, replicated over the TP group); grads are of `loss_sum` (the engine divides by the
global token count). Each grad is the rank's slice of the full gradient, already summed
where the layout needs it (sequence-parallel replicated parameters, replicated key/value
heads), so `unshard_weights` gathers it. `owned_masks(cfg, plan)` marks the entries of each
slice this rank counts in a sum over ranks that must count every parameter once (the global
gradient norm: replicated parameters on TP rank 0, a repeated key/value head on its lowest
rank, the tied embedding on the first stage). With tied embeddings across pipeline stages
the last stage holds a copy of `embed.tokens` for its head; the caller sums its gradient
with the first stage's, as Megatron's embedding group does. Collectives use group-local
replica groups [[0 .. TP-1]] (key/value copies: groups of `kv_replicator` consecutive TP
ranks), which the engine binds to the rank's TP group.
"""

from nxcc.nxd.models.decoder.config import DecoderConfig, DecoderError, StagePlan, check_plan
from nxcc.nxd.models.decoder.model import decoder_model
from nxcc.nxd.models.decoder.stage import (
    activation_type,
    build_logits,
    build_stage,
    program,
    token_type,
)
from nxcc.nxd.models.decoder.weights import (
    init_full_weights,
    model_specs,
    owned_masks,
    parameter_count,
    shard_weights,
    stage_specs,
    unshard_weights,
)

__all__ = ["DecoderConfig", "DecoderError", "StagePlan", "activation_type", "build_logits",
           "build_stage", "check_plan", "decoder_model", "init_full_weights", "model_specs",
           "owned_masks", "parameter_count", "program", "shard_weights", "stage_specs",
           "token_type", "unshard_weights"]
