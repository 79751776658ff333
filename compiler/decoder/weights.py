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

With tied embeddings and pipeline stages, the last stage holds its own copy of
`embed.tokens` for the head (Megatron's `word_embeddings` on the last stage): drawn from the
same numbers, its gradient summed with the first stage's by the engine, so the two stay
equal; a global sum counts the first stage's (`owned_masks`).

(n attention heads, k key/value heads, d head size, F the MLP size, V the vocabulary, P the
positions; products are x @ W, weights [in, out].) A fused weight is split segment by
segment, so rank r holds its q heads, then its k and v heads, in that order. With
`kv_replicator` R > 1 key/value head h is held by ranks h R .. h R + R - 1.

A pipeline stage that holds only some chunks of a layer's q/k/v or MLP projection (a cut
inside a layer, `config.PIECES`) holds those columns of each rank's slice (`ParamSpec.part`:
of the whole fused q/k/v slice, of each of gate and up, and the matching rows of down);
`join_parts` puts consecutive stages' parts back together.

`init_full_weights(cfg, seed)` draws the full model once (normal(0, 0.02) matrices and
embeddings, the residual projections `attn.out` and `mlp.down` scaled by 1/sqrt(2 L) as
GPT-2 and Megatron do, norm weights 1, biases 0), so every layout starts from the same
numbers; `shard_weights` slices it for one rank; `unshard_weights` puts the ranks' slices
(parameters, or gradients, whose replicated key/value copies the stage program already
summed) back together.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from nxcc.compiler.decoder.config import (
    CHUNKS,
    MLP_FIRST,
    PIECES,
    PIECES_PER_LAYER,
    QKV_FIRST,
    DecoderConfig,
    StagePlan,
    check_plan,
    chunk_columns,
)

INIT_STD = 0.02


@dataclass(frozen=True)
class Segment:
    """A run of `length` entries along the split axis, in units of `unit` (a head's size),
    each unit repeated `replicas` times before the split (replicated key/value heads)."""

    length: int
    unit: int = 1
    replicas: int = 1


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: full shape, the axis split over tensor-parallel ranks (None:
    replicated) and the segments of that axis."""

    name: str
    shape: tuple[int, ...]
    axis: int | None = None
    segments: tuple[Segment, ...] = ()
    init: str = "normal"  # normal | scaled | ones | zeros
    # a pipeline stage's part: entries [lo, hi) of each segment of the rank's slice, or of
    # the whole slice (`part_spans_segments`: the fused q/k/v projection)
    part: tuple[int, int] | None = None
    part_spans_segments: bool = False

    @property
    def replicated(self) -> bool:
        return self.axis is None

    def local_shape(self, tp: int) -> tuple[int, ...]:
        if self.axis is None:
            return self.shape
        shape = list(self.shape)
        if self.part is None:
            shape[self.axis] = sum(s.length * s.replicas // tp for s in self.segments)
        else:
            count = 1 if self.part_spans_segments else len(self.segments)
            shape[self.axis] = (self.part[1] - self.part[0]) * count
        return tuple(shape)

    def whole(self) -> ParamSpec:
        """The spec without a pipeline part."""
        return replace(self, part=None)


def _norm(prefix: str, cfg: DecoderConfig) -> list[ParamSpec]:
    h = cfg.hidden_size
    out = [ParamSpec(f"{prefix}.weight", (h,), init="ones")]
    if cfg.layer_norm:
        out.append(ParamSpec(f"{prefix}.bias", (h,), init="zeros"))
    return out


def layer_specs(cfg: DecoderConfig, i: int, kv_replicator: int = 1) -> list[ParamSpec]:
    """The parameters of layer `i`, in the order the stage program takes them."""
    h, d, f = cfg.hidden_size, cfg.head_dim, cfg.ffn_hidden_size
    n, k = cfg.num_attention_heads, cfg.kv_heads
    qkv = (Segment(n * d, d), Segment(k * d, d, kv_replicator), Segment(k * d, d, kv_replicator))
    p = f"layers.{i}"
    specs = [*_norm(f"{p}.attn_norm", cfg),
             ParamSpec(f"{p}.attn.qkv", (h, (n + 2 * k) * d), 1, qkv, part_spans_segments=True)]
    if cfg.has_bias:
        specs.append(ParamSpec(f"{p}.attn.qkv_bias", ((n + 2 * k) * d,), 0, qkv, "zeros",
                               part_spans_segments=True))
    specs.append(ParamSpec(f"{p}.attn.out", (n * d, h), 0, (Segment(n * d, d),), "scaled"))
    if cfg.has_bias:
        specs.append(ParamSpec(f"{p}.attn.out_bias", (h,), init="zeros"))
    specs += _norm(f"{p}.mlp_norm", cfg)
    if not cfg.swiglu:
        specs.append(ParamSpec(f"{p}.mlp.up", (h, f), 1, (Segment(f),)))
        if cfg.has_bias:
            specs.append(ParamSpec(f"{p}.mlp.up_bias", (f,), 0, (Segment(f),), "zeros"))
    else:
        specs.append(ParamSpec(f"{p}.mlp.gate_up", (h, 2 * f), 1, (Segment(f), Segment(f))))
        if cfg.has_bias:
            specs.append(ParamSpec(f"{p}.mlp.gate_up_bias", (2 * f,), 0,
                                   (Segment(f), Segment(f)), "zeros"))
    specs.append(ParamSpec(f"{p}.mlp.down", (f, h), 0, (Segment(f),), "scaled"))
    if cfg.has_bias:
        specs.append(ParamSpec(f"{p}.mlp.down_bias", (h,), init="zeros"))
    return specs


def embedding_specs(cfg: DecoderConfig) -> list[ParamSpec]:
    v, h = cfg.vocab_size, cfg.hidden_size
    specs = [ParamSpec("embed.tokens", (v, h), 0, (Segment(v),))]
    if not cfg.rotary:
        specs.append(ParamSpec("embed.positions", (cfg.max_position_embeddings, h)))
    return specs


def head_specs(cfg: DecoderConfig) -> list[ParamSpec]:
    v, h = cfg.vocab_size, cfg.hidden_size
    norm = _norm("final_norm", cfg)
    return norm if cfg.tie_embeddings else [*norm, ParamSpec("head", (h, v), 1, (Segment(v),))]


def model_specs(cfg: DecoderConfig, kv_replicator: int = 1) -> list[ParamSpec]:
    """Every parameter of the model, embedding first, head last."""
    layers = [s for i in range(cfg.num_layers) for s in layer_specs(cfg, i, kv_replicator)]
    return [*embedding_specs(cfg), *layers, *head_specs(cfg)]


def stage_specs(cfg: DecoderConfig, plan: StagePlan) -> list[ParamSpec]:
    """The parameters of `plan`'s stage, in the order its programs take them."""
    specs = embedding_specs(cfg) if plan.has_embedding else []
    for i in plan.layers:
        specs += [s for s in (_stage_spec(s, plan, i) for s in
                              layer_specs(cfg, i, plan.kv_replicator)) if s is not None]
    if plan.has_head:
        specs += head_specs(cfg)
        if tied_copy(cfg, plan):
            specs.append(embedding_specs(cfg)[0])
    return specs


def tied_copy(cfg: DecoderConfig, plan: StagePlan) -> bool:
    """Whether `plan`'s stage holds the head's copy of the tied embedding table."""
    return cfg.tie_embeddings and plan.has_head and not plan.has_embedding


#: The parameter two pipeline stages hold copies of (tied embeddings).
TIED = "embed.tokens"


def _stage_spec(spec: ParamSpec, plan: StagePlan, layer: int) -> ParamSpec | None:
    """Layer parameter `spec` as `plan`'s stage holds it: whole, a column part (a
    projection the stage holds some chunks of), or not at all (None)."""
    kind = _PIECE_OF[_key(spec.name)]
    if kind in _CHUNKED:
        chunks = plan.chunks(layer, _CHUNKED[kind])
        if len(chunks) in (0, CHUNKS):
            return spec if chunks else None
        width = spec.local_shape(plan.tp_size)[spec.axis]  # type: ignore[index]
        if not spec.part_spans_segments:
            width //= len(spec.segments)
        return replace(spec, part=chunk_columns(width, chunks.start, chunks.stop))
    return spec if PIECES_PER_LAYER * layer + PIECES.index(kind) in plan.pieces else None


# the piece reading each layer parameter; the projections' matrices (and biases split like
# them) are split by columns over the chunks a stage holds: the fused q/k/v projection
# across its segments, the MLP's within each (gate and up, or the down rows)
_CHUNKED = {"qkv": QKV_FIRST, "mlp": MLP_FIRST}
_PIECE_OF = {"attn_norm": "attn.qkv.0", "attn.qkv": "qkv", "attn.qkv_bias": "qkv",
             "attn.out": "attn.out", "attn.out_bias": "attn.out", "mlp_norm": "mlp.0",
             "mlp.up": "mlp", "mlp.up_bias": "mlp", "mlp.gate_up": "mlp",
             "mlp.gate_up_bias": "mlp", "mlp.down": "mlp", "mlp.down_bias": f"mlp.{CHUNKS - 1}"}


def _key(name: str) -> str:
    """`layers.I.attn_norm.weight` -> `attn_norm`, `layers.I.mlp.down` -> `mlp.down`."""
    rest = name.split(".", 2)[2]
    return rest.rsplit(".", 1)[0] if rest.endswith((".weight", ".bias")) else rest


def _segments(spec: ParamSpec, arr: np.ndarray) -> list[np.ndarray]:
    """`arr` (one rank's slice of `spec`, or a pipeline part of it) cut into what a part is
    taken from: the whole, or its segments (all as wide where that is done: the MLP's)."""
    if spec.part_spans_segments:
        return [arr]
    assert spec.axis is not None  # its callers return replicated specs whole
    return np.split(arr, len(spec.segments), axis=spec.axis)


def take_part(spec: ParamSpec, local: np.ndarray) -> np.ndarray:
    """The pipeline part `spec.part` of one rank's whole slice `local` (itself when the
    spec has no part)."""
    if spec.part is None or spec.axis is None:
        return local
    lo, hi = spec.part
    pieces = [np.take(seg, range(lo, hi), axis=spec.axis) for seg in _segments(spec, local)]
    return np.ascontiguousarray(np.concatenate(pieces, axis=spec.axis))


def join_parts(spec: ParamSpec, parts: Sequence[np.ndarray]) -> np.ndarray:
    """One rank's whole slice of `spec` from the pipeline parts of it that consecutive
    stages hold, in stage order (one part: itself)."""
    if len(parts) == 1 or spec.axis is None:
        return np.array(parts[0])
    split = [_segments(spec, p) for p in parts]
    return np.concatenate([np.concatenate([s[k] for s in split], axis=spec.axis)
                           for k in range(len(split[0]))], axis=spec.axis)


def init_full_weights(cfg: DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """The whole model's initial weights, drawn in `model_specs` order from `seed`."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(cfg.dtype)
    scaled = INIT_STD / np.sqrt(2.0 * cfg.num_layers)
    out: dict[str, np.ndarray] = {}
    for spec in model_specs(cfg):
        if spec.init == "ones":
            arr = np.ones(spec.shape)
        elif spec.init == "zeros":
            arr = np.zeros(spec.shape)
        else:
            std = scaled if spec.init == "scaled" else INIT_STD
            arr = rng.normal(0.0, std, spec.shape)
        out[spec.name] = arr.astype(dtype)
    return out


def _units(arr: np.ndarray, axis: int, seg: Segment) -> np.ndarray:
    """The segment's entries with each unit repeated `replicas` times."""
    if seg.replicas == 1:
        return arr
    shape = list(arr.shape)
    blocks = np.moveaxis(arr, axis, 0).reshape(seg.length // seg.unit, seg.unit, -1)
    blocks = np.repeat(blocks, seg.replicas, axis=0)
    moved = [shape[axis] * seg.replicas, *(s for i, s in enumerate(shape) if i != axis)]
    return np.moveaxis(blocks.reshape(moved), 0, axis)


def shard(spec: ParamSpec, full: np.ndarray, rank: int, tp: int) -> np.ndarray:
    """Rank `rank`'s slice of parameter `spec` (a copy)."""
    if spec.axis is None:
        return np.array(full)
    pieces, offset = [], 0
    for seg in spec.segments:
        part = np.take(full, range(offset, offset + seg.length), axis=spec.axis)
        offset += seg.length
        wide = _units(part, spec.axis, seg)
        size = wide.shape[spec.axis] // tp
        pieces.append(np.take(wide, range(rank * size, (rank + 1) * size), axis=spec.axis))
    return take_part(spec, np.ascontiguousarray(np.concatenate(pieces, axis=spec.axis)))


def unshard(spec: ParamSpec, parts: Sequence[np.ndarray]) -> np.ndarray:
    """The full parameter from every rank's whole slice (replicated: rank 0's; a repeated
    unit: its first copy; join pipeline parts first with `join_parts`)."""
    if spec.axis is None:
        return np.array(parts[0])
    tp = len(parts)
    out, starts = [], [0] * tp
    for seg in spec.segments:
        size = seg.length * seg.replicas // tp
        wide = np.concatenate([np.take(p, range(s, s + size), axis=spec.axis)
                               for p, s in zip(parts, starts, strict=True)], axis=spec.axis)
        starts = [s + size for s in starts]
        if seg.replicas > 1:
            keep = [u * seg.unit * seg.replicas + j for u in range(seg.length // seg.unit)
                    for j in range(seg.unit)]
            wide = np.take(wide, keep, axis=spec.axis)
        out.append(wide)
    return np.concatenate(out, axis=spec.axis)


def shard_weights(full: dict[str, np.ndarray], cfg: DecoderConfig, plan: StagePlan
                  ) -> dict[str, np.ndarray]:
    """The parameters of `plan`'s stage and rank, sliced from the full model's."""
    check_plan(cfg, plan)
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


def owned_mask(spec: ParamSpec, rank: int, tp: int) -> np.ndarray:
    """bool, the shape of rank `rank`'s slice: the entries this rank counts when a sum over
    every rank must count each parameter entry once (a global gradient norm). Replicated
    parameters belong to rank 0, a repeated key/value head to the lowest rank holding it."""
    local = spec.local_shape(tp)
    if spec.axis is None:
        return np.full(local, rank == 0)
    flat = ParamSpec(spec.name, (spec.shape[spec.axis],), 0, spec.segments)
    index = np.arange(spec.shape[spec.axis])
    lower = {int(i) for q in range(rank) for i in shard(flat, index, q, tp)}
    mine = shard(replace(flat, part=spec.part, part_spans_segments=spec.part_spans_segments),
                 index, rank, tp)
    keep = np.array([int(i) not in lower for i in mine])
    shape = [1] * len(local)
    shape[spec.axis] = len(keep)
    return np.broadcast_to(keep.reshape(shape), local).copy()


def owned_masks(cfg: DecoderConfig, plan: StagePlan) -> dict[str, np.ndarray]:
    """`owned_mask` of every parameter of `plan`'s stage on its rank (none of the tied
    embedding's copy on the last stage: the first stage's counts)."""
    check_plan(cfg, plan)
    out = {s.name: owned_mask(s, plan.tp_rank, plan.tp_size) for s in stage_specs(cfg, plan)}
    if tied_copy(cfg, plan):
        out[TIED] = np.zeros_like(out[TIED])
    return out
