"""The decoder's plain inputs: the model (`DecoderConfig`) and one rank's part (`StagePlan`).

Both are frozen dataclasses with no knowledge of YAML; the training engine fills them from
the `model` and `distributed_strategy` blocks. `check_plan(cfg, plan)` raises `DecoderError`
(one line naming both numbers) when the plan does not fit the model.

Grouped-query attention under tensor parallelism: the `num_attention_heads` query heads are
split evenly over the `tp_size` ranks. Key/value heads are split too when `num_kv_heads`
divides by `tp_size` (`kv_replicator` 1); with fewer key/value heads than ranks, each is
repeated `kv_replicator` times so that `num_kv_heads * kv_replicator == tp_size` (as NxD's
GQA layer does) and every rank holds exactly one.
"""

from __future__ import annotations

from dataclasses import dataclass

FAMILIES = ("gpt", "llama")
RECOMPUTE = ("none", "selective", "full")


class DecoderError(ValueError):
    """The model or plan cannot be built (the message names the setting)."""


@dataclass(frozen=True)
class DecoderConfig:
    """A decoder-only transformer. `gpt`: learned positions, LayerNorm, GELU (tanh form, as
    GPT-2) MLP, biases; `llama`: rotary positions (`rope_theta`), RMSNorm, SwiGLU MLP, no
    biases, grouped-query attention."""

    family: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    ffn_hidden_size: int
    vocab_size: int
    max_position_embeddings: int
    num_kv_heads: int | None = None  # None: as many as attention heads
    rope_theta: float = 10000.0
    norm_eps: float = 1e-5
    tie_embeddings: bool = False
    dtype: str = "float32"

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise DecoderError(f"family {self.family!r} is not one of {', '.join(FAMILIES)}")
        for name in ("num_layers", "hidden_size", "num_attention_heads", "ffn_hidden_size",
                     "vocab_size", "max_position_embeddings"):
            if getattr(self, name) < 1:
                raise DecoderError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.kv_heads < 1:
            raise DecoderError(f"num_kv_heads must be at least 1, got {self.kv_heads}")
        if self.hidden_size % self.num_attention_heads:
            raise DecoderError(f"hidden_size {self.hidden_size} does not divide by "
                               f"num_attention_heads {self.num_attention_heads}")
        if self.num_attention_heads % self.kv_heads:
            raise DecoderError(f"num_attention_heads {self.num_attention_heads} does not "
                               f"divide by num_kv_heads {self.kv_heads}")
        if self.family == "gpt" and self.kv_heads != self.num_attention_heads:
            raise DecoderError("the gpt family has as many key/value heads as attention heads")
        if self.family == "llama" and self.head_dim % 2:
            raise DecoderError(f"rotary positions need an even head size, got {self.head_dim}")
        if self.tie_embeddings:
            raise DecoderError("tie_embeddings is not supported (the head has its own weight)")
        if self.dtype not in ("float32", "float64"):
            raise DecoderError(f"dtype {self.dtype!r} is not float32 or float64")

    @property
    def kv_heads(self) -> int:
        return self.num_attention_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def has_bias(self) -> bool:
        return self.family == "gpt"


@dataclass(frozen=True)
class StagePlan:
    """One rank's program: its tensor-parallel rank and degree, sequence parallelism, the
    key/value head replication, its pipeline stage's layers [first_layer, last_layer),
    whether the stage holds the embedding (first stage) and the head + loss (last stage),
    the recomputation mode and the micro-batch shape [micro_batch, seq_length]."""

    tp_rank: int = 0
    tp_size: int = 1
    sequence_parallel: bool = False
    kv_replicator: int = 1
    first_layer: int = 0
    last_layer: int = 0
    has_embedding: bool = True
    has_head: bool = True
    recompute: str = "none"
    micro_batch: int = 1
    seq_length: int = 1
    first_block: int | None = None
    last_block: int | None = None

    @property
    def blocks(self) -> range:
        """The stage's blocks [first, last): block 2i is layer i's attention (its norm,
        attention and residual add), block 2i + 1 its MLP; by default the whole layers."""
        first = 2 * self.first_layer if self.first_block is None else self.first_block
        last = 2 * self.last_layer if self.last_block is None else self.last_block
        return range(first, last)

    @property
    def layers(self) -> range:
        """The layers of which the stage holds at least one block."""
        b = self.blocks
        return range(b.start // 2, (b.stop + 1) // 2)


def _need(ok: bool, message: str) -> None:
    if not ok:
        raise DecoderError(message)


def check_plan(cfg: DecoderConfig, plan: StagePlan) -> None:
    """DecoderError when `plan` does not fit `cfg` (naming both numbers)."""
    tp, rep = plan.tp_size, plan.kv_replicator
    _need(tp >= 1 and 0 <= plan.tp_rank < tp,
          f"tp_rank {plan.tp_rank} is not in 0..{tp - 1} (tp_size {tp})")
    _need(plan.recompute in RECOMPUTE,
          f"recompute {plan.recompute!r} is not one of {', '.join(RECOMPUTE)}")
    blocks = plan.blocks
    _need(0 <= blocks.start <= blocks.stop <= 2 * cfg.num_layers,
          f"layers [{blocks.start // 2}, {(blocks.stop + 1) // 2}) are not within the model's "
          f"{cfg.num_layers}")
    _need(bool(plan.blocks) or plan.has_embedding or plan.has_head,
          "a stage needs at least one layer, the embedding or the head")
    _need(plan.micro_batch >= 1 and plan.seq_length >= 1, "micro_batch and seq_length must "
          "be at least 1")
    _need(plan.seq_length <= cfg.max_position_embeddings,
          f"seq_length {plan.seq_length} exceeds max_position_embeddings "
          f"{cfg.max_position_embeddings}")
    _need(cfg.num_attention_heads % tp == 0, f"num_attention_heads "
          f"{cfg.num_attention_heads} does not divide by tensor parallel size {tp}")
    _need(cfg.ffn_hidden_size % tp == 0,
          f"ffn_hidden_size {cfg.ffn_hidden_size} does not divide by tensor parallel size {tp}")
    _need(cfg.vocab_size % tp == 0,
          f"vocab_size {cfg.vocab_size} does not divide by tensor parallel size {tp}")
    if rep == 1:
        _need(cfg.kv_heads % tp == 0, f"num_kv_heads {cfg.kv_heads} does not divide by "
              f"tensor parallel size {tp} (set kv_replicator to {max(tp // cfg.kv_heads, 1)})")
    else:
        _need(cfg.kv_heads * rep == tp, f"num_kv_heads {cfg.kv_heads} x kv_replicator {rep} "
              f"must equal the tensor parallel size {tp}")
    if plan.sequence_parallel:
        _need(plan.seq_length % tp == 0, f"seq_length {plan.seq_length} does not divide by "
              f"tensor parallel size {tp} (sequence parallelism)")
