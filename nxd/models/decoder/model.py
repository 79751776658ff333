"""The decoder as a model of the parallel primitives: `decoder_model(cfg, seq) -> build`.

`build(m)` declares the inputs `tokens` and `labels` (s32 [micro_batch, seq]) and builds,
on `m`'s rank:

- the vocabulary-parallel embedding (`ParallelEmbedding`, reduce-scattered along the
  sequence with sequence parallelism) plus learned positions;
- per layer, inside one `full` recomputation segment: the normed input into the
  column-parallel fused q/k/v projection (`ColumnParallelLinear`, q | k | v heads, the
  key/value heads repeated `kv_replicator` times), the attention core (its products one
  `selective` segment), the row-parallel output projection (`RowParallelLinear`) and the
  residual add; the normed input into the column-parallel up (or gate/up) projection, the
  activation, the row-parallel down projection and the residual add;
- the final norm, the vocabulary-parallel head (with tied embeddings the table transposed)
  and `parallel_cross_entropy`.

Cut points (`config.PIECES`): after the embedding, and after each of a layer's ten pieces
(the q/k/v and MLP projections in four column chunks each, `nxd.pipeline_chunks`), so the
model has 10 L + 2 pieces: piece 0 the embedding, piece 10 i + j + 1 layer i's PIECES[j],
the last the head and loss. Parameter names are `weights.py`'s.
"""

from __future__ import annotations

from nxcc.ir.core import Value
from nxcc.ir.dtypes import DType
from nxcc.nxd import functional, mappings
from nxcc.nxd.layers import (
    ColumnParallelLinear,
    LayerNorm,
    ParallelEmbedding,
    RMSNorm,
    RowParallelLinear,
    matmul,
)
from nxcc.nxd.loss_functions import parallel_cross_entropy
from nxcc.nxd.markers import checkpoint, pipeline_chunks, pipeline_cut
from nxcc.nxd.model import Model
from nxcc.nxd.models.decoder.attention import Attention
from nxcc.nxd.models.decoder.config import CHUNKS, PIECES, DecoderConfig, chunks_fit
from nxcc.nxd.params import INIT_STD, Segment
from nxcc.nxd.pipeline.stage import ModelFn

TOKENS, LABELS = "tokens", "labels"


def model_dtype(cfg: DecoderConfig) -> DType:
    return DType.F64 if cfg.dtype == "float64" else DType.F32


class Decoder:
    """The decoder's parts on `m`'s rank."""

    def __init__(self, m: Model, cfg: DecoderConfig, seq: int) -> None:
        self.m, self.cfg, self.seq = m, cfg, seq
        self.attention = Attention(m, cfg, seq)
        self.scaled = INIT_STD / (2.0 * cfg.num_layers) ** 0.5
        self.fits = chunks_fit(cfg, m.tp_size, m.kv_replicator)

    def _norm(self, name: str, x: Value) -> Value:
        h, eps = self.cfg.hidden_size, self.cfg.norm_eps
        norm = LayerNorm(self.m, name, h, eps) if self.cfg.layer_norm else \
            RMSNorm(self.m, name, h, eps)
        return norm(x)

    def embed(self, tokens: Value) -> Value:
        """Vocabulary-parallel lookup, then learned positions (this rank's part of the
        sequence with sequence parallelism)."""
        m, b, cfg = self.m, self.m.b, self.cfg
        x = ParallelEmbedding(m, "embed.tokens", cfg.vocab_size, cfg.hidden_size,
                              sequence_parallel_enabled=True)(tokens)
        if cfg.rotary:
            return x
        positions = m.parameter("embed.positions", (cfg.max_position_embeddings,
                                                    cfg.hidden_size))
        local_s, hidden = x.type.shape[1], cfg.hidden_size
        start = m.tp_rank * local_s if m.sequence_parallel else 0
        pos = b.slice(positions, start_indices=(start, 0),
                      limit_indices=(start + local_s, hidden), strides=(1, 1))
        return b.add(x, b.broadcast_in_dim(pos, shape=x.type.shape, broadcast_dimensions=(1, 2)))

    def _cut(self, layer: int, piece: str) -> None:
        pipeline_cut(self.m, f"layers.{layer}.{piece}")

    def attention_block(self, i: int, x: Value) -> Value:
        m, cfg, pre = self.m, self.cfg, f"layers.{i}"
        n, k, d = cfg.num_attention_heads, cfg.kv_heads, cfg.head_dim
        rep = m.kv_replicator
        normed = self._norm(f"{pre}.attn_norm", x)
        qkv = ColumnParallelLinear(
            m, f"{pre}.attn.qkv", cfg.hidden_size,
            (Segment(n * d, d), Segment(k * d, d, rep), Segment(k * d, d, rep)),
            bias=cfg.has_bias, gather_output=False, sequence_parallel_enabled=True,
            bias_name=f"{pre}.attn.qkv_bias", pipeline_chunks=CHUNKS,
            chunks_span_segments=True)
        h = qkv.enter(normed)
        fused = pipeline_chunks(
            m, CHUNKS, f"{pre}.attn.qkv", lambda c: qkv.columns(h, c),
            lambda a, z: m.b.concatenate(a, z, dimension=z.type.rank - 1), self.fits)
        q, key, value = self.attention.split_qkv(fused)
        self._cut(i, PIECES[CHUNKS - 1])
        ctx = self.attention.core(q, key, value)
        self._cut(i, "attn.core")
        out = RowParallelLinear(m, f"{pre}.attn.out", (Segment(n * d, d),), cfg.hidden_size,
                                bias=cfg.has_bias, input_is_parallel=True,
                                sequence_parallel_enabled=True, init="scaled", std=self.scaled,
                                bias_name=f"{pre}.attn.out_bias")(ctx)
        x = m.b.add(x, out)
        self._cut(i, "attn.out")
        return x

    def mlp_block(self, i: int, x: Value) -> Value:
        m, b, cfg, pre = self.m, self.m.b, self.cfg, f"layers.{i}"
        f = cfg.ffn_hidden_size
        normed = self._norm(f"{pre}.mlp_norm", x)
        name = f"{pre}.mlp.gate_up" if cfg.swiglu else f"{pre}.mlp.up"
        up = ColumnParallelLinear(m, name, cfg.hidden_size, (f, f) if cfg.swiglu else f,
                                  bias=cfg.has_bias, gather_output=False,
                                  sequence_parallel_enabled=True, bias_name=f"{name}_bias",
                                  pipeline_chunks=CHUNKS)
        down = RowParallelLinear(m, f"{pre}.mlp.down", f, cfg.hidden_size, bias=cfg.has_bias,
                                 input_is_parallel=True, sequence_parallel_enabled=True,
                                 init="scaled", std=self.scaled,
                                 bias_name=f"{pre}.mlp.down_bias", pipeline_chunks=CHUNKS)
        h = up.enter(normed)

        def chunk(c: range) -> Value:
            y = up.columns(h, c)
            if not cfg.swiglu:
                return down.rows(functional.gelu(m, y), c)
            half = y.type.shape[-1] // 2
            rank = y.type.rank
            gate = b.slice(y, start_indices=(0,) * rank, limit_indices=(*y.type.shape[:-1], half),
                           strides=(1,) * rank)
            value = b.slice(y, start_indices=(0,) * (rank - 1) + (half,),
                            limit_indices=y.type.shape, strides=(1,) * rank)
            return down.rows(b.multiply(functional.silu(m, gate), value), c)

        total = pipeline_chunks(m, CHUNKS, f"{pre}.mlp", chunk, b.add, self.fits)
        x = b.add(x, down.reduce(total))
        self._cut(i, PIECES[-1])
        return x

    def logits(self, x: Value) -> Value:
        """Final norm and the vocabulary-parallel head: this rank's columns of the logits
        [batch, seq, V / TP] (with tied embeddings the table transposed)."""
        m, cfg = self.m, self.cfg
        normed = self._norm("final_norm", x)
        if not cfg.tie_embeddings:
            return ColumnParallelLinear(m, "head", cfg.hidden_size, cfg.vocab_size, bias=False,
                                        gather_output=False,
                                        sequence_parallel_enabled=True)(normed)
        h = mappings.gather_from_sequence_parallel_region(m, normed)
        table = m.parameter("embed.tokens", (cfg.vocab_size, cfg.hidden_size), axis=0)
        return m.mark_local(matmul(m, h, m.b.transpose(table, permutation=(1, 0))))

    def body(self, tokens: Value, layers: range | None = None) -> Value:
        """Everything before the head: the residual stream after the last layer (of
        `layers`, by default all)."""
        self.attention.prepare()
        x = self.embed(tokens)
        pipeline_cut(self.m, "embed")
        for i in range(self.cfg.num_layers) if layers is None else layers:
            with checkpoint(self.m, "full"):
                x = self.attention_block(i, x)
                x = self.mlp_block(i, x)
        return x


def decoder_model(cfg: DecoderConfig, seq: int, layers: range | None = None) -> ModelFn:
    """The decoder's build function for sequences of `seq` tokens (module docstring); with
    `layers`, a model of those layers only between the embedding and the head (a stage's
    programs need no other: their structure does not depend on where a layer sits)."""
    def build(m: Model) -> tuple[Value, Value]:
        tokens = m.input(TOKENS, (seq,), DType.S32)
        labels = m.input(LABELS, (seq,), DType.S32)
        d = Decoder(m, cfg, seq)
        return parallel_cross_entropy(m, d.logits(d.body(tokens, layers)), labels)
    return build
