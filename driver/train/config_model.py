"""The `model` block: which decoder nxcc builds, or the ONNX file that stands in for it.

NxD Training picks the model by `model_source`. `megatron`: the architecture is spelled in
the YAML (`position_embedding_type`, `normalization`, `activation`, `has_bias`...), each
key choosing its part; the family (GPT: learned positions, LayerNorm, GELU, biases, tied
embeddings; Llama: rotary positions, RMSNorm, SwiGLU, no biases) gives the defaults of the
keys a file leaves out. `hf`: a
Llama whose sizes come from the Hugging Face `config.json` named by `model.model_config`
(`vocab_size`, `num_attention_heads`, `num_key_value_heads`, `intermediate_size`,
`rms_norm_eps`...), the YAML's own keys overriding it as NxD's do. nxcc also reads
`model.vocab_size`, `num_attention_heads`, `num_kv_heads`, `intermediate_size` straight from
the YAML, so a file needs no `config.json`.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from nxcc.compiler.decoder.config import FAMILY_PARTS
from nxcc.driver.train.errors import TrainConfigError

#: Hugging Face config.json name -> the `model.` key it fills.
HF_KEYS = {
    "num_hidden_layers": "num_layers", "hidden_size": "hidden_size",
    "num_attention_heads": "num_attention_heads", "num_key_value_heads": "num_kv_heads",
    "intermediate_size": "intermediate_size", "vocab_size": "vocab_size",
    "max_position_embeddings": "max_position_embeddings", "rope_theta": "rope_theta",
    "rms_norm_eps": "layernorm_epsilon", "tie_word_embeddings":
        "share_embeddings_and_output_weights", "initializer_range": "init_method_std",
    "sliding_window": "sliding_window_size",
}


@dataclass(frozen=True)
class ModelConfig:
    """A built-in decoder: `family` gpt or llama, its sizes, and how it is trained.

    `num_kv_heads` equals `num_attention_heads` without grouped-query attention.
    `pipeline_cuts` are NxD's layer names; `cut_after` the index of the last layer of each
    stage but the last (`model.layers.10` ends a stage with layer 10). Without them,
    `pipeline_split` (nxcc's own key) chooses NxD's split of whole layers ("nxd") or the
    split of balanced FLOPs over layer pieces ("flops"; `train.cuts`).
    """

    family: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    num_kv_heads: int
    ffn_hidden_size: int
    vocab_size: int
    max_position_embeddings: int
    rope_theta: float
    layernorm_epsilon: float
    has_bias: bool
    share_embeddings_and_output_weights: bool
    init_method_std: float
    activations_checkpoint_granularity: str | None
    pipeline_cuts: tuple[str, ...] = ()
    cut_after: tuple[int, ...] = ()
    pipeline_split: str = "nxd"  # without pipeline_cuts: NxD's split, or "flops" balanced
    sliding_window_size: int | None = None  # None: every earlier key (plain causal)
    #: (position_embedding_type, normalization, activation); empty: the family's own
    architecture: tuple[str, ...] = ()

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads


@dataclass(frozen=True)
class OnnxModelConfig:
    """An ONNX model trained in place of the built-in decoder: cross-entropy on its output
    `loss_input` against the new input `label_input` (as `compile --training` does)."""

    path: str
    loss_input: str
    label_input: str
    activations_checkpoint_granularity: str | None = None


def model_values(acted: dict[str, object], base_dir: str) -> dict[str, object]:
    """The `model.` keys (without the prefix) after the HF config.json, if any, is read
    under them: the YAML's values win."""
    given = {k[len("model."):]: v for k, v in acted.items()
             if k.startswith("model.") and not k.startswith("model.optim.") and v is not None}
    json_path = given.get("model_config")
    if acted.get("model_source") != "hf" or json_path is None:
        return given
    return {**read_hf_config(resolve_path(str(json_path), base_dir)), **given}


def read_hf_config(path: str) -> dict[str, object]:
    """The `model.` keys a Hugging Face Llama config.json gives."""
    where = "model.model_config"
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as exc:
        raise TrainConfigError(where, f"cannot read {path} ({exc.strerror})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise TrainConfigError(where, f"{path} is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise TrainConfigError(where, f"{path} does not hold a JSON object")
    act = data.get("hidden_act", "silu")
    if act != "silu":
        raise TrainConfigError(where, f"{path}: hidden_act {act!r} is not Llama's 'silu'")
    return {key: data[name] for name, key in HF_KEYS.items() if data.get(name) is not None}


def resolve_path(path: str, base_dir: str) -> str:
    """An input path of the YAML: relative ones are taken from the YAML file's folder."""
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))


ARCHITECTURE_KEYS = ("position_embedding_type", "normalization", "activation")


def architecture_of(source: str, values: dict[str, object]) -> tuple[str, str, str]:
    """(position_embedding_type, normalization, activation) as NxD's keys spell them
    (defaults: NeMo's, which are GPT's); an HF model is a Llama. The values themselves are
    checked by their key specs."""
    if source == "hf":
        return FAMILY_PARTS["llama"]
    return tuple(str(values.get(k) or FAMILY_PARTS["gpt"][i])  # type: ignore[return-value]
                 for i, k in enumerate(ARCHITECTURE_KEYS))


def family_of(architecture: tuple[str, str, str]) -> str:
    """The family whose defaults a model takes (biases, tied embeddings, the FFN size):
    gpt with learned positions, llama with rotary ones; the other two parts may be the
    other family's (NxD builds each part as its key says)."""
    return "llama" if architecture[0] == "rope" else "gpt"
