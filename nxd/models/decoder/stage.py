"""`build_stage(cfg, plan)`: one rank's programs of one pipeline stage, as a Module.

The decoder's build function (`model.py`) on `plan`'s rank, cut at the stage's pieces and
differentiated by `nxd.pipeline.stage` (see there and the package docstring for the
functions, their inputs and outputs, the stash and the gradient reductions). Recomputation
(`plan.recompute`): `full` recomputes each layer (or the part of it the stage holds) from
its input, `selective` the attention's inner products.
"""

from __future__ import annotations

from nxcc.ir.core import Module
from nxcc.ir.dtypes import DType
from nxcc.ir.types import TensorType
from nxcc.nxd.model import Model, ModelError
from nxcc.nxd.models.decoder.config import DecoderConfig, DecoderError, StagePlan, check_plan
from nxcc.nxd.models.decoder.model import TOKENS, Decoder, model_dtype
from nxcc.nxd.models.decoder.trace import model_name, rank_of, stage_range, traced
from nxcc.nxd.pipeline.stage import build_stage as build_generic
from nxcc.nxd.pipeline.stage import program

TOKEN_DTYPE = DType.S32

__all__ = ["activation_type", "build_logits", "build_stage", "program", "token_type"]


def activation_type(cfg: DecoderConfig, plan: StagePlan) -> TensorType:
    """The type of the activations between stages: [micro_batch, seq (/ TP with sequence
    parallelism), hidden]."""
    s = plan.seq_length // plan.tp_size if plan.sequence_parallel else plan.seq_length
    return TensorType(model_dtype(cfg), (plan.micro_batch, s, cfg.hidden_size))


def token_type(plan: StagePlan) -> TensorType:
    """The type of the token and label inputs: s32 [micro_batch, seq]."""
    return TensorType(TOKEN_DTYPE, (plan.micro_batch, plan.seq_length))


def build_stage(cfg: DecoderConfig, plan: StagePlan) -> Module:
    """The programs of `plan`'s stage on its tensor-parallel rank (DecoderError when the
    plan does not fit the model)."""
    check_plan(cfg, plan)
    try:
        return build_generic(traced(cfg, plan), stage_range(cfg, plan), plan.recompute,
                             model_name(cfg, plan)).module
    except DecoderError:
        raise
    except ModelError as exc:
        raise DecoderError(str(exc)) from None


def build_logits(cfg: DecoderConfig, plan: StagePlan) -> Module:
    """`logits(*P, tokens) -> logits [micro_batch, seq_length, vocab / TP]`: the forward of
    a stage holding the whole model (the embedding and the head), for inference and for
    checking weights against another implementation."""
    check_plan(cfg, plan)
    if not (plan.has_embedding and plan.has_head):
        raise DecoderError("logits are computed by a stage holding the embedding and the "
                           "head")
    m = Model(rank_of(plan), dtype=model_dtype(cfg),
              name=f"decoder_{cfg.family}_logits_tp{plan.tp_rank}of{plan.tp_size}")
    tokens = m.input(TOKENS, (plan.seq_length,), TOKEN_DTYPE)
    d = Decoder(m, cfg, plan.seq_length)
    fn = m.fn
    fn.results = [d.logits(d.body(tokens))]
    fn.result_names = ["logits"]
    fn.params = [*(x for x in fn.params if x is not tokens), tokens]
    fn.name = "logits"
    m.module.functions = {"logits": fn, **{k: v for k, v in m.module.functions.items()
                                           if k != "forward"}}
    m.module.entry = "logits"
    return program(m.module, "logits")
