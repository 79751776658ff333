"""The decoder's plans as runs of the pieces of its model, and its built models (cached).

The decoder's `StagePlan` counts pieces over the layers only (`config.PIECES`, ten per
layer) and says apart whether the stage holds the embedding and the head. A stage is built
from the model of the layers it holds between the embedding and the head (`model.py` with
`layers`): 10 n + 2 pieces for n layers, the embedding first, the head and loss last, so
layer piece k of the first held layer a is model piece k - 10 a + 1 (`stage_range`). The
embedding and the head are in every such model, so a tied embedding's copies are found as
in the whole model (`nxd.pipeline.stage`).
"""

from __future__ import annotations

from functools import lru_cache

from nxcc.nxd.model import Model, RankSpec
from nxcc.nxd.models.decoder.config import PIECES_PER_LAYER, DecoderConfig, StagePlan
from nxcc.nxd.models.decoder.model import decoder_model, model_dtype
from nxcc.nxd.pipeline.stage import Traced, trace


def stage_range(cfg: DecoderConfig, plan: StagePlan) -> range:
    """The pieces of `plan`'s stage in the model of its layers (`traced`)."""
    pieces, first = plan.pieces, PIECES_PER_LAYER * plan.layers.start
    start = 0 if plan.has_embedding else pieces.start - first + 1
    stop = pieces.stop - first + 1 + (1 if plan.has_head else 0)
    return range(start, stop)


def rank_of(plan: StagePlan) -> RankSpec:
    return RankSpec(plan.tp_rank, plan.tp_size, plan.sequence_parallel, plan.kv_replicator,
                    plan.micro_batch)


def model_name(cfg: DecoderConfig, plan: StagePlan) -> str:
    return (f"decoder_{cfg.family}_tp{plan.tp_rank}of{plan.tp_size}_pieces"
            f"{plan.pieces.start}to{plan.pieces.stop}")


@lru_cache(maxsize=32)
def _traced(cfg: DecoderConfig, rank: RankSpec, seq: int, layers: range,
            cuts: frozenset[int], name: str) -> Traced:
    return trace(decoder_model(cfg, seq, layers), rank, cuts, name, model_dtype(cfg))


def traced(cfg: DecoderConfig, plan: StagePlan) -> Traced:
    """The model of `plan`'s layers as its rank builds it, split where its stage begins
    and ends."""
    r = stage_range(cfg, plan)
    count = PIECES_PER_LAYER * len(plan.layers) + 2
    cuts = frozenset(c for c in (r.start, r.stop) if 0 < c < count)
    return _traced(cfg, rank_of(plan), plan.seq_length, plan.layers, cuts,
                   model_name(cfg, plan))


def traced_whole(cfg: DecoderConfig, kv_replicator: int = 1) -> Model:
    """The whole model on one rank of the smallest layout `kv_replicator` allows (its
    parameters' full shapes do not depend on the layout)."""
    tp = cfg.kv_heads * kv_replicator if kv_replicator > 1 else 1
    return _traced(cfg, RankSpec(0, tp, False, kv_replicator, 1), 1, range(cfg.num_layers),
                   frozenset(), f"decoder_{cfg.family}").model
