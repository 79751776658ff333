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

from nxcc.nxd.model import ModelError

#: each family's (position embedding, normalization, MLP activation): NxD Megatron's
#: `position_embedding_type`, `normalization` and `activation`, which a config may also mix
FAMILY_PARTS = {"gpt": ("learned_absolute", "layernorm", "gelu"),
                "llama": ("rope", "rmsnorm", "swiglu")}
FAMILIES = tuple(FAMILY_PARTS)
POSITIONS = ("learned_absolute", "rope")
NORMALIZATIONS = ("layernorm", "rmsnorm")
ACTIVATIONS = ("gelu", "swiglu")
RECOMPUTE = ("none", "selective", "full")


class DecoderError(ModelError):
    """The model or plan cannot be built (the message names the setting)."""


@dataclass(frozen=True)
class DecoderConfig:
    """A decoder-only transformer. `gpt`: learned positions, LayerNorm, GELU (tanh form, as
    GPT-2) MLP, biases; `llama`: rotary positions (`rope_theta`), RMSNorm, SwiGLU MLP, no
    biases, grouped-query attention. `position`, `normalization`, `activation` and `biases`
    (None: the family's) mix the parts: e.g. rotary positions with LayerNorm and GELU.
    `sliding_window` (None: off): a query attends to itself and the `sliding_window - 1`
    keys before it, as Megatron's and Mistral's sliding-window attention."""

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
    sliding_window: int | None = None
    position: str | None = None
    normalization: str | None = None
    activation: str | None = None
    biases: bool | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise DecoderError(f"family {self.family!r} is not one of {', '.join(FAMILIES)}")
        for name, default, allowed in zip(("position", "normalization", "activation"),
                                          FAMILY_PARTS[self.family],
                                          (POSITIONS, NORMALIZATIONS, ACTIVATIONS),
                                          strict=True):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, default)
            elif value not in allowed:
                raise DecoderError(f"{name} {value!r} is not one of {', '.join(allowed)}")
        if self.biases is None:
            object.__setattr__(self, "biases", self.family == "gpt")
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
        if self.rotary and self.head_dim % 2:
            raise DecoderError(f"rotary positions need an even head size, got {self.head_dim}")
        if self.sliding_window is not None and self.sliding_window < 1:
            raise DecoderError(f"sliding_window must be at least 1, got {self.sliding_window}")
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
        """Biases on the linear layers (LayerNorm's own bias goes with LayerNorm)."""
        return bool(self.biases)

    @property
    def rotary(self) -> bool:
        return self.position == "rope"

    @property
    def layer_norm(self) -> bool:
        return self.normalization == "layernorm"

    @property
    def swiglu(self) -> bool:
        return self.activation == "swiglu"


CHUNKS = 4
PIECES = (*(f"attn.qkv.{c}" for c in range(CHUNKS)), "attn.core", "attn.out",
          *(f"mlp.{c}" for c in range(CHUNKS)))
"""A layer's pieces, in order (piece 10i + j of the model is layer i's PIECES[j]): the
q/k/v projection in four column chunks `attn.qkv.0` .. `attn.qkv.3` (chunk c: the c-th
quarter of each rank's columns of the fused projection; chunk 0 also norms the input,
chunk 3 also splits heads and applies rotary positions), `attn.core` (the causal softmax
attention of each head), `attn.out` (output projection and residual add), and the MLP in
four column chunks `mlp.0` .. `mlp.3` (chunk c: the c-th quarter of each rank's MLP
columns: its part of the up or gate/up projection, the activation and its rows of the down
projection; `mlp.0` also norms the input, `mlp.3` adds the reduced sum to the residual).
A pipeline stage holds a run of pieces; what crosses a cut inside a layer is every value the
next piece reads (`stage.handoff_types`), and a cut inside a projection splits its weight
by columns between the two stages (`weights.py`)."""
PIECES_PER_LAYER = len(PIECES)
QKV_FIRST = PIECES.index("attn.qkv.0")
CORE = PIECES.index("attn.core")
OUT = PIECES.index("attn.out")
MLP_FIRST = PIECES.index("mlp.0")


def chunks_in(pieces: range, first: int) -> range:
    """The chunks (0 .. CHUNKS - 1) in `pieces` of the projection whose chunk 0 is piece
    `first`."""
    return range(min(max(pieces.start - first, 0), CHUNKS),
                 max(min(pieces.stop - first, CHUNKS), 0))


@dataclass(frozen=True)
class StagePlan:
    """One rank's program: its tensor-parallel rank and degree, sequence parallelism, the
    key/value head replication, its pipeline stage's layers [first_layer, last_layer) (or
    pieces [first_piece, last_piece), see PIECES), whether the stage holds the embedding
    (first stage) and the head + loss (last stage), the recomputation mode and the
    micro-batch shape [micro_batch, seq_length]."""

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
    first_piece: int | None = None
    last_piece: int | None = None

    @property
    def pieces(self) -> range:
        """The stage's pieces [first, last) (PIECES_PER_LAYER per layer); by default the
        whole layers [first_layer, last_layer)."""
        n = PIECES_PER_LAYER
        first = n * self.first_layer if self.first_piece is None else self.first_piece
        last = n * self.last_layer if self.last_piece is None else self.last_piece
        return range(first, last)

    @property
    def layers(self) -> range:
        """The layers of which the stage holds at least one piece."""
        p, n = self.pieces, PIECES_PER_LAYER
        return range(p.start // n, (p.stop + n - 1) // n)

    def chunks(self, layer: int, first_piece: int) -> range:
        """The chunks (0 .. CHUNKS - 1) the stage holds of `layer`'s projection whose chunk
        0 is piece `first_piece` of a layer (QKV_FIRST or MLP_FIRST)."""
        return chunks_in(self.pieces, PIECES_PER_LAYER * layer + first_piece)


def chunks_fit(cfg: DecoderConfig, tp: int, kv_replicator: int) -> bool:
    """Whether each rank holds at least CHUNKS columns of the q/k/v and MLP projections, so
    a pipeline cut may fall inside them."""
    qkv = (cfg.num_attention_heads + 2 * cfg.kv_heads * kv_replicator) * cfg.head_dim // tp
    return min(cfg.ffn_hidden_size // tp, qkv) >= CHUNKS


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
    pieces = plan.pieces
    _need(0 <= pieces.start <= pieces.stop <= PIECES_PER_LAYER * cfg.num_layers,
          f"layers [{plan.layers.start}, {plan.layers.stop}) are not within the model's "
          f"{cfg.num_layers}")
    _need(bool(pieces) or plan.has_embedding or plan.has_head,
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
    cut = [i for i in plan.layers for first in (QKV_FIRST, MLP_FIRST)
           if len(plan.chunks(i, first)) not in (0, CHUNKS)]
    _need(not cut or chunks_fit(cfg, tp, rep),
          f"a pipeline cut inside layer {cut[0] if cut else 0}'s projections needs at least "
          f"{CHUNKS} of their columns on each rank (ffn_hidden_size {cfg.ffn_hidden_size}, "
          f"tensor parallel size {tp})")
    if plan.sequence_parallel:
        _need(plan.seq_length % tp == 0, f"seq_length {plan.seq_length} does not divide by "
              f"tensor parallel size {tp} (sequence parallelism)")
