"""Shared pieces of the decoder tests: a numpy reference of the model, and running a stage
program on every tensor-parallel rank as threads (the interpreter, collectives through the
runtime's in-process communicator)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from nxcc.backend.runtime.multicore import Communicator, Endpoint, run_cores
from nxcc.ir.attributes import AttrValue
from nxcc.ir.core import Module
from nxcc.ir.interpreter import IRContext
from nxcc.nxd.models.decoder import (
    DecoderConfig,
    StagePlan,
    build_stage,
    program,
    shard_weights,
    stage_specs,
)
from nxcc.nxd.models.decoder.weights import ParamSpec, join_parts, unshard


def llama(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    args = {"num_layers": layers, "hidden_size": 16, "num_attention_heads": 4,
            "num_kv_heads": 2, "ffn_hidden_size": 24, "vocab_size": 32,
            "max_position_embeddings": 16, "rope_theta": 500.0, "dtype": dtype, **kw}
    return DecoderConfig("llama", **args)


def gpt_tied(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    """`gpt` with the head tied to the embedding (NxD's share_embeddings_and_output_weights)."""
    return gpt(layers, dtype, tie_embeddings=True, **kw)


def gpt(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    args = {"num_layers": layers, "hidden_size": 16, "num_attention_heads": 4,
            "ffn_hidden_size": 32, "vocab_size": 32, "max_position_embeddings": 16,
            "dtype": dtype, **kw}
    return DecoderConfig("gpt", **args)


def rope_layernorm_gelu(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    """A mix of the families' parts (NxD Megatron spells each in the YAML): rotary
    positions, LayerNorm, a GELU MLP, biases everywhere, grouped-query attention."""
    return llama(layers, dtype, normalization="layernorm", activation="gelu", biases=True,
                 **kw)


def learned_rmsnorm_swiglu(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    """The other mix: learned positions, RMSNorm, a SwiGLU MLP with biases (gate_up_bias),
    grouped-query attention."""
    return gpt(layers, dtype, normalization="rmsnorm", activation="swiglu",
               num_kv_heads=2, **kw)


def gpt_without_biases(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
    """NxD's has_bias: False on the gpt family (LayerNorm keeps its own bias)."""
    return gpt(layers, dtype, biases=False, **kw)


def windowed(make, window: int = 3):
    """`make` with a sliding window of `window` keys."""
    def windowed_config(layers: int = 2, dtype: str = "float32", **kw) -> DecoderConfig:
        return make(layers, dtype, sliding_window=window, **kw)
    return windowed_config


MIXES = [rope_layernorm_gelu, learned_rmsnorm_swiglu, gpt_without_biases]
MIX_IDS = ["rope_layernorm_gelu", "learned_rmsnorm_swiglu", "gpt_without_biases"]


def random_weights(cfg: DecoderConfig, seed: int) -> dict[str, np.ndarray]:
    """Every parameter drawn at random (norm weights near 1, biases nonzero), so that no
    gradient is trivially zero."""
    from nxcc.nxd.models.decoder import model_specs

    rng = np.random.default_rng(seed)
    out = {}
    for s in model_specs(cfg):
        base = 1.0 if s.init == "ones" else 0.0
        scale = 0.1 if s.init in ("ones", "zeros") else 0.3
        out[s.name] = (base + rng.normal(0, scale, s.shape)).astype(cfg.dtype)
    return out


def batch(cfg: DecoderConfig, b: int, s: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(0, cfg.vocab_size, (b, s)).astype(np.int32)
    labels = rng.integers(0, cfg.vocab_size, (b, s)).astype(np.int32)
    labels[0, 1] = -100
    return tokens, labels


# ---- numpy reference ---------------------------------------------------------------------

def _norm(cfg: DecoderConfig, x: np.ndarray, w: Mapping[str, np.ndarray], name: str
          ) -> np.ndarray:
    if cfg.normalization == "layernorm":
        x = x - x.mean(-1, keepdims=True)
        y = x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps)
        return y * w[f"{name}.weight"] + w[f"{name}.bias"]
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.norm_eps) * w[f"{name}.weight"]


def _rope(x: np.ndarray, theta: float) -> np.ndarray:
    s, d = x.shape[1], x.shape[-1]
    inv = theta ** (-np.arange(0, d, 2) / d)
    ang = np.arange(s)[:, None] * inv[None, :]
    ang = np.concatenate([ang, ang], -1)[None, :, None, :]
    turned = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    return x * np.cos(ang) + turned * np.sin(ang)


def _layer(cfg: DecoderConfig, x: np.ndarray, w: Mapping[str, np.ndarray], i: int
           ) -> np.ndarray:
    p = f"layers.{i}"
    n, k, d = cfg.num_attention_heads, cfg.kv_heads, cfg.head_dim
    bsz, s, _ = x.shape
    h = _norm(cfg, x, w, f"{p}.attn_norm")
    qkv = h @ w[f"{p}.attn.qkv"] + w.get(f"{p}.attn.qkv_bias", 0.0)
    q = qkv[..., :n * d].reshape(bsz, s, n, d)
    key = qkv[..., n * d:(n + k) * d].reshape(bsz, s, k, d)
    val = qkv[..., (n + k) * d:].reshape(bsz, s, k, d)
    if cfg.position == "rope":
        q, key = _rope(q, cfg.rope_theta), _rope(key, cfg.rope_theta)
    key, val = np.repeat(key, n // k, axis=2), np.repeat(val, n // k, axis=2)
    scores = np.einsum("bqhd,bkhd->bhqk", q, key) / np.sqrt(d)
    allowed = np.tril(np.ones((s, s), bool))
    if cfg.sliding_window is not None:  # query - key < window
        allowed &= np.subtract.outer(np.arange(s), np.arange(s)) < cfg.sliding_window
    scores = np.where(allowed, scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    ctx = np.einsum("bhqk,bkhd->bqhd", probs, val).reshape(bsz, s, n * d)
    x = x + ctx @ w[f"{p}.attn.out"] + w.get(f"{p}.attn.out_bias", 0.0)
    h = _norm(cfg, x, w, f"{p}.mlp_norm")
    if cfg.activation == "gelu":
        u = h @ w[f"{p}.mlp.up"] + w.get(f"{p}.mlp.up_bias", 0.0)
        u = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
    else:
        gu = h @ w[f"{p}.mlp.gate_up"] + w.get(f"{p}.mlp.gate_up_bias", 0.0)
        f = gu.shape[-1] // 2
        gate = gu[..., :f]
        u = gate / (1 + np.exp(-gate)) * gu[..., f:]
    return x + u @ w[f"{p}.mlp.down"] + w.get(f"{p}.mlp.down_bias", 0.0)


def reference_loss(cfg: DecoderConfig, weights: Mapping[str, np.ndarray], tokens: np.ndarray,
                   labels: np.ndarray) -> tuple[float, float]:
    """(sum of the cross-entropy over positions whose label is not -100, their count), in
    float64."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    x = w["embed.tokens"][tokens]
    if cfg.position == "learned_absolute":
        x = x + w["embed.positions"][:tokens.shape[1]]
    for i in range(cfg.num_layers):
        x = _layer(cfg, x, w, i)
    head = w["head"] if "head" in w else w["embed.tokens"].T  # tied embeddings
    logits = _norm(cfg, x, w, "final_norm") @ head
    top = logits.max(-1, keepdims=True)
    lse = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
    keep = labels != -100
    picked = np.take_along_axis(logits, np.where(keep, labels, 0)[..., None], -1)[..., 0]
    return float(((lse - picked) * keep).sum()), float(keep.sum())


# ---- running stage programs on TP ranks ----------------------------------------------------

class RankContext(IRContext):
    """The interpreter with collectives through one rank's endpoint."""

    def __init__(self, module: Module, endpoint: Endpoint) -> None:
        super().__init__(module, partition_id=endpoint.rank)
        self.endpoint = endpoint

    def collective(self, opcode: str, args: Sequence[np.ndarray],
                   attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
        return self.endpoint.collective(opcode, args, attrs)


def plans(plan: StagePlan) -> list[StagePlan]:
    from dataclasses import replace

    return [replace(plan, tp_rank=r) for r in range(plan.tp_size)]


def run_tp(cfg: DecoderConfig, plan: StagePlan, fn: str,
           per_rank_args: Sequence[Sequence[np.ndarray]]) -> list[list[np.ndarray]]:
    """Function `fn` of every TP rank's stage module, run as threads; each rank's
    outputs."""
    ranks = plans(plan)
    programs = [program(build_stage(cfg, p), fn) for p in ranks]
    if plan.tp_size == 1:
        return [IRContext(programs[0]).call(fn, list(per_rank_args[0]))]
    comm = Communicator(plan.tp_size)

    def work(r: int):
        return lambda: RankContext(programs[r], comm.endpoint(r)).call(fn,
                                                                       list(per_rank_args[r]))

    return run_cores([work(r) for r in range(plan.tp_size)], comm)


def shards(full: Mapping[str, np.ndarray], cfg: DecoderConfig, plan: StagePlan
           ) -> list[list[np.ndarray]]:
    """Each rank's parameter arrays in program order."""
    out = []
    for p in plans(plan):
        mine = shard_weights(dict(full), cfg, p)
        out.append([mine[s.name] for s in stage_specs(cfg, p)])
    return out


def gather_grads(outs: Sequence[Sequence[np.ndarray]], first: int, cfg: DecoderConfig,
                 plan: StagePlan) -> dict[str, np.ndarray]:
    """The full gradients from every rank's outputs (gradients from index `first`)."""
    return gather_pipeline_grads([(outs, first, plan)], cfg)


def gather_pipeline_grads(stages: Sequence[tuple[Sequence[Sequence[np.ndarray]], int,
                                                StagePlan]],
                          cfg: DecoderConfig) -> dict[str, np.ndarray]:
    """The full gradients from pipeline stages (each: every TP rank's outputs, the index
    of the first gradient, the stage's plan), joining the column parts of a projection
    that a cut inside a layer split between stages."""
    parts: dict[str, list[list[np.ndarray]]] = {}
    specs: dict[str, ParamSpec] = {}
    for outs, first, plan in stages:
        for j, spec in enumerate(stage_specs(cfg, plan)):
            specs[spec.name] = spec
            per_rank = parts.setdefault(spec.name, [[] for _ in outs])
            for r, o in enumerate(outs):
                per_rank[r].append(o[first + j])
    return {name: unshard(specs[name].whole(), [join_parts(specs[name], p) for p in ranks])
            for name, ranks in parts.items()}


def single_stage(cfg: DecoderConfig, full: Mapping[str, np.ndarray], tokens: np.ndarray,
                 labels: np.ndarray, **plan_kw) -> tuple[float, float, dict[str, np.ndarray]]:
    """(loss_sum, token_count, full gradients) of one stage holding the whole model."""
    plan = StagePlan(last_layer=cfg.num_layers, micro_batch=tokens.shape[0],
                     seq_length=tokens.shape[1], **plan_kw)
    args = [[*w, tokens, labels] for w in shards(full, cfg, plan)]
    outs = run_tp(cfg, plan, "forward_backward", args)
    for o in outs[1:]:  # the loss is replicated over the TP group
        np.testing.assert_allclose(o[0], outs[0][0], rtol=1e-6)
    return float(outs[0][0]), float(outs[0][1]), gather_grads(outs, 2, cfg, plan)


def assert_gradients_match_finite_differences(cfg: DecoderConfig,
                                              full: Mapping[str, np.ndarray],
                                              tokens: np.ndarray, labels: np.ndarray,
                                              grads: Mapping[str, np.ndarray]) -> None:
    """`grads` (of the loss over `full`) agree with central differences of `reference_loss`
    (step 1e-6) at two seeded elements of every weight, to rel 1e-5 (abs 1e-7)."""
    rng = np.random.default_rng(5)
    h = 1e-6
    for name, w in full.items():
        for _ in range(2):
            i = tuple(int(rng.integers(0, n)) for n in w.shape)
            plus, minus = dict(full), dict(full)
            plus[name], minus[name] = w.copy(), w.copy()
            plus[name][i] += h
            minus[name][i] -= h
            fd = (reference_loss(cfg, plus, tokens, labels)[0]
                  - reference_loss(cfg, minus, tokens, labels)[0]) / (2 * h)
            assert grads[name][i] == pytest.approx(fd, rel=1e-5, abs=1e-7), (name, i)
