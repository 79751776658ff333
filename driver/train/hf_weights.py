"""The built-in decoder's weights as Hugging Face checkpoints: Llama and GPT-2, in and out.

nxcc's names and layouts (`nxd/models/decoder/weights.py`: products x @ W with W [in, out],
the q/k/v projection fused, the SwiGLU's gate and up fused) against transformers':

    llama (LlamaForCausalLM)                      gpt (GPT2LMHeadModel)
    model.embed_tokens.weight [V, H]              transformer.wte.weight [V, H]
                                                  transformer.wpe.weight [P, H]
    model.layers.i.input_layernorm.weight         transformer.h.i.ln_1.weight / .bias
    self_attn.{q,k,v}_proj.weight [out, in]       attn.c_attn.weight [H, 3H] (in, out)
    self_attn.o_proj.weight [H, n d]              attn.c_proj.weight [H, H] (in, out)
    post_attention_layernorm.weight               ln_2.weight / .bias
    mlp.{gate,up}_proj.weight [F, H]              mlp.c_fc.weight [H, F]
    mlp.down_proj.weight [H, F]                   mlp.c_proj.weight [F, H]
    model.norm.weight                             transformer.ln_f.weight / .bias
    lm_head.weight [V, H] (none when tied)        lm_head.weight (tied: none)

with the biases beside their weights (Llama's `attention_bias` / `mlp_bias`; GPT-2 always
has them: a decoder without biases is exported with zeros, which compute the same). Both
use the rotary layout nxcc uses (the head's halves rotated together) and the same grouping
of query heads over key/value heads, so no permutation is needed. A decoder whose parts mix
the families (rope with LayerNorm, ...) has no transformers class and is refused.
"""

from __future__ import annotations

import numpy as np

from nxcc.nxd.models.decoder import DecoderConfig
from nxcc.nxd.models.decoder.config import FAMILY_PARTS

HFWeights = dict[str, np.ndarray]


class HFMappingError(ValueError):
    """Weights that do not fit the model (the message names the tensor)."""


def hf_kind(cfg: DecoderConfig) -> str:
    """"llama" or "gpt2": the transformers family the decoder is; HFMappingError else."""
    parts = (cfg.position, cfg.normalization, cfg.activation)
    if parts == FAMILY_PARTS["llama"] and cfg.sliding_window is None:
        return "llama"
    if parts == FAMILY_PARTS["gpt"] and cfg.kv_heads == cfg.num_attention_heads and \
            cfg.sliding_window is None:
        return "gpt2"
    raise HFMappingError(f"a decoder of {', '.join(map(str, parts))}"
                         f"{', sliding window' if cfg.sliding_window else ''}"
                         f"{', grouped-query attention' if cfg.kv_heads != cfg.num_attention_heads else ''}"  # noqa: E501
                         " has no Hugging Face Llama or GPT-2 counterpart")


def hf_config(cfg: DecoderConfig, init_std: float = 0.02, eos_id: int | None = None
              ) -> dict[str, object]:
    """config.json of the transformers model the decoder is (`eos_id`: the tokenizer's
    end-of-text id, when known)."""
    eos = eos_id if eos_id is not None and 0 <= eos_id < cfg.vocab_size else None
    return {**_hf_config(cfg, init_std), "bos_token_id": eos, "eos_token_id": eos}


def _hf_config(cfg: DecoderConfig, init_std: float) -> dict[str, object]:
    if hf_kind(cfg) == "llama":
        return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                "hidden_size": cfg.hidden_size, "intermediate_size": cfg.ffn_hidden_size,
                "num_attention_heads": cfg.num_attention_heads,
                "num_key_value_heads": cfg.kv_heads, "num_hidden_layers": cfg.num_layers,
                "head_dim": cfg.head_dim, "max_position_embeddings":
                    cfg.max_position_embeddings, "rms_norm_eps": cfg.norm_eps,
                "rope_theta": cfg.rope_theta, "vocab_size": cfg.vocab_size,
                "tie_word_embeddings": cfg.tie_embeddings, "hidden_act": "silu",
                "attention_bias": cfg.has_bias, "mlp_bias": cfg.has_bias,
                "initializer_range": init_std, "torch_dtype": "float32"}
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
            "n_embd": cfg.hidden_size, "n_head": cfg.num_attention_heads,
            "n_layer": cfg.num_layers, "n_positions": cfg.max_position_embeddings,
            "n_inner": cfg.ffn_hidden_size, "vocab_size": cfg.vocab_size,
            "layer_norm_epsilon": cfg.norm_eps, "activation_function": "gelu_new",
            "tie_word_embeddings": cfg.tie_embeddings, "resid_pdrop": 0.0,
            "embd_pdrop": 0.0, "attn_pdrop": 0.0, "scale_attn_weights": True,
            "initializer_range": init_std, "torch_dtype": "float32"}


def _llama_out(cfg: DecoderConfig, w: dict[str, np.ndarray]) -> HFWeights:
    nq, nkv = cfg.num_attention_heads * cfg.head_dim, cfg.kv_heads * cfg.head_dim
    f = cfg.ffn_hidden_size
    out = {"model.embed_tokens.weight": w["embed.tokens"],
           "model.norm.weight": w["final_norm.weight"]}
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = w["head"].T
    for i in range(cfg.num_layers):
        p, h = f"layers.{i}", f"model.layers.{i}"
        qkv, gate_up = w[f"{p}.attn.qkv"], w[f"{p}.mlp.gate_up"]
        out |= {f"{h}.input_layernorm.weight": w[f"{p}.attn_norm.weight"],
                f"{h}.post_attention_layernorm.weight": w[f"{p}.mlp_norm.weight"],
                f"{h}.self_attn.q_proj.weight": qkv[:, :nq].T,
                f"{h}.self_attn.k_proj.weight": qkv[:, nq:nq + nkv].T,
                f"{h}.self_attn.v_proj.weight": qkv[:, nq + nkv:].T,
                f"{h}.self_attn.o_proj.weight": w[f"{p}.attn.out"].T,
                f"{h}.mlp.gate_proj.weight": gate_up[:, :f].T,
                f"{h}.mlp.up_proj.weight": gate_up[:, f:].T,
                f"{h}.mlp.down_proj.weight": w[f"{p}.mlp.down"].T}
        if cfg.has_bias:
            b, gb = w[f"{p}.attn.qkv_bias"], w[f"{p}.mlp.gate_up_bias"]
            out |= {f"{h}.self_attn.q_proj.bias": b[:nq], f"{h}.self_attn.k_proj.bias":
                    b[nq:nq + nkv], f"{h}.self_attn.v_proj.bias": b[nq + nkv:],
                    f"{h}.self_attn.o_proj.bias": w[f"{p}.attn.out_bias"],
                    f"{h}.mlp.gate_proj.bias": gb[:f], f"{h}.mlp.up_proj.bias": gb[f:],
                    f"{h}.mlp.down_proj.bias": w[f"{p}.mlp.down_bias"]}
    return out


def _gpt2_out(cfg: DecoderConfig, w: dict[str, np.ndarray]) -> HFWeights:
    def bias(name: str, size: int) -> np.ndarray:
        return w[name] if name in w else np.zeros(size, np.float32)

    h3, hid, f = 3 * cfg.hidden_size, cfg.hidden_size, cfg.ffn_hidden_size
    out = {"transformer.wte.weight": w["embed.tokens"],
           "transformer.wpe.weight": w["embed.positions"],
           "transformer.ln_f.weight": w["final_norm.weight"],
           "transformer.ln_f.bias": w["final_norm.bias"]}
    if not cfg.tie_embeddings:
        out["lm_head.weight"] = w["head"].T
    for i in range(cfg.num_layers):
        p, h = f"layers.{i}", f"transformer.h.{i}"
        out |= {f"{h}.ln_1.weight": w[f"{p}.attn_norm.weight"],
                f"{h}.ln_1.bias": w[f"{p}.attn_norm.bias"],
                f"{h}.ln_2.weight": w[f"{p}.mlp_norm.weight"],
                f"{h}.ln_2.bias": w[f"{p}.mlp_norm.bias"],
                f"{h}.attn.c_attn.weight": w[f"{p}.attn.qkv"],
                f"{h}.attn.c_attn.bias": bias(f"{p}.attn.qkv_bias", h3),
                f"{h}.attn.c_proj.weight": w[f"{p}.attn.out"],
                f"{h}.attn.c_proj.bias": bias(f"{p}.attn.out_bias", hid),
                f"{h}.mlp.c_fc.weight": w[f"{p}.mlp.up"],
                f"{h}.mlp.c_fc.bias": bias(f"{p}.mlp.up_bias", f),
                f"{h}.mlp.c_proj.weight": w[f"{p}.mlp.down"],
                f"{h}.mlp.c_proj.bias": bias(f"{p}.mlp.down_bias", hid)}
    return out


def to_hf(cfg: DecoderConfig, weights: dict[str, np.ndarray]) -> HFWeights:
    """The decoder's whole weights by transformers' names (float32, contiguous)."""
    out = (_llama_out if hf_kind(cfg) == "llama" else _gpt2_out)(cfg, weights)
    return {k: np.ascontiguousarray(v, np.float32) for k, v in out.items()}


# in: transformers' names -> nxcc's


def _take(hf: dict[str, np.ndarray], name: str, used: set[str]) -> np.ndarray:
    if name not in hf:
        raise HFMappingError(f"tensor {name!r} is missing")
    used.add(name)
    return np.asarray(hf[name], np.float32)


def _llama_in(cfg: DecoderConfig, hf: dict[str, np.ndarray], used: set[str]
              ) -> dict[str, np.ndarray]:
    def t(name: str) -> np.ndarray:
        return _take(hf, name, used)

    out = {"embed.tokens": t("model.embed_tokens.weight"),
           "final_norm.weight": t("model.norm.weight")}
    if not cfg.tie_embeddings:
        out["head"] = t("lm_head.weight").T
    for i in range(cfg.num_layers):
        p, h = f"layers.{i}", f"model.layers.{i}"
        a, m = f"{h}.self_attn", f"{h}.mlp"
        out |= {f"{p}.attn_norm.weight": t(f"{h}.input_layernorm.weight"),
                f"{p}.mlp_norm.weight": t(f"{h}.post_attention_layernorm.weight"),
                f"{p}.attn.qkv": np.concatenate([t(f"{a}.{x}_proj.weight").T
                                                 for x in "qkv"], axis=1),
                f"{p}.attn.out": t(f"{a}.o_proj.weight").T,
                f"{p}.mlp.gate_up": np.concatenate([t(f"{m}.gate_proj.weight").T,
                                                    t(f"{m}.up_proj.weight").T], axis=1),
                f"{p}.mlp.down": t(f"{m}.down_proj.weight").T}
        if cfg.has_bias:
            out |= {f"{p}.attn.qkv_bias": np.concatenate([t(f"{a}.{x}_proj.bias")
                                                          for x in "qkv"]),
                    f"{p}.attn.out_bias": t(f"{a}.o_proj.bias"),
                    f"{p}.mlp.gate_up_bias": np.concatenate([t(f"{m}.gate_proj.bias"),
                                                             t(f"{m}.up_proj.bias")]),
                    f"{p}.mlp.down_bias": t(f"{m}.down_proj.bias")}
    return out


def _gpt2_in(cfg: DecoderConfig, hf: dict[str, np.ndarray], used: set[str]
             ) -> dict[str, np.ndarray]:
    def t(name: str) -> np.ndarray:
        return _take(hf, name, used)

    out = {"embed.tokens": t("transformer.wte.weight"),
           "embed.positions": t("transformer.wpe.weight"),
           "final_norm.weight": t("transformer.ln_f.weight"),
           "final_norm.bias": t("transformer.ln_f.bias")}
    if not cfg.tie_embeddings:
        out["head"] = t("lm_head.weight").T
    for i in range(cfg.num_layers):
        p, h = f"layers.{i}", f"transformer.h.{i}"
        out |= {f"{p}.attn_norm.weight": t(f"{h}.ln_1.weight"),
                f"{p}.attn_norm.bias": t(f"{h}.ln_1.bias"),
                f"{p}.mlp_norm.weight": t(f"{h}.ln_2.weight"),
                f"{p}.mlp_norm.bias": t(f"{h}.ln_2.bias"),
                f"{p}.attn.qkv": t(f"{h}.attn.c_attn.weight"),
                f"{p}.attn.out": t(f"{h}.attn.c_proj.weight"),
                f"{p}.mlp.up": t(f"{h}.mlp.c_fc.weight"),
                f"{p}.mlp.down": t(f"{h}.mlp.c_proj.weight")}
        biases = {f"{p}.attn.qkv_bias": f"{h}.attn.c_attn.bias",
                  f"{p}.attn.out_bias": f"{h}.attn.c_proj.bias",
                  f"{p}.mlp.up_bias": f"{h}.mlp.c_fc.bias",
                  f"{p}.mlp.down_bias": f"{h}.mlp.c_proj.bias"}
        for ours, theirs in biases.items():
            value = t(theirs)
            if cfg.has_bias:
                out[ours] = value
            elif np.any(value):
                raise HFMappingError(f"tensor {theirs!r} is not zero, and the model has no "
                                     "biases (model.has_bias: false)")
    return out


#: Buffers some checkpoints carry that are no weights.
_BUFFERS = (".attn.bias", ".attn.masked_bias", "rotary_emb.inv_freq")


def from_hf(cfg: DecoderConfig, hf: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The decoder's whole weights from a transformers checkpoint's tensors (GPT-2's may
    lack the `transformer.` prefix, as the original files do); HFMappingError for a
    missing, extra or misshapen tensor."""
    kind = hf_kind(cfg)
    if kind == "gpt2" and not any(k.startswith("transformer.") for k in hf):
        hf = {(k if k.startswith("lm_head.") else f"transformer.{k}"): v
              for k, v in hf.items()}
    used: set[str] = set()
    out = (_llama_in if kind == "llama" else _gpt2_in)(cfg, hf, used)
    if cfg.tie_embeddings and "lm_head.weight" in hf:
        used.add("lm_head.weight")  # a tied head saved anyway must be the table
        if not np.array_equal(np.asarray(hf["lm_head.weight"], np.float32),
                              out["embed.tokens"]):
            raise HFMappingError("lm_head.weight differs from the embedding table, and the "
                                 "model ties them (share_embeddings_and_output_weights)")
    extra = sorted(k for k in set(hf) - used if not k.endswith(_BUFFERS))
    if extra:
        raise HFMappingError(f"tensor {extra[0]!r} is not a weight of the model "
                             f"({len(extra)} such)")
    return out
