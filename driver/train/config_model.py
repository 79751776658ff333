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

import os
from collections.abc import Callable
from dataclasses import dataclass

from nxcc.backend.userfiles import UserFileError
from nxcc.backend.userfiles.structured import load_json_file
from nxcc.driver.train.errors import TrainConfigError
from nxcc.nxd.models.decoder.config import FAMILY_PARTS

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


@dataclass(frozen=True)
class ModuleModelConfig:
    """A model the user writes with `nxcc.nxd`'s primitives (`model.module: FILE:FUNCTION`):
    `function` of the Python file `path`, called as `function(m, **args)` with
    `model.module_args` for each rank, trained with every parallelism as the decoder is.
    `pipeline_cuts` name the model's cut points (`nxd.pipeline_cut`) that end stages."""

    path: str
    function: str
    args: tuple[tuple[str, object], ...] = ()
    activations_checkpoint_granularity: str | None = None
    pipeline_cuts: tuple[str, ...] = ()

    @property
    def kwargs(self) -> dict[str, object]:
        return dict(self.args)

    @property
    def spec(self) -> str:
        return f"{self.path}:{self.function}"


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
    try:  # a regular file, its size and nesting bounded
        data = load_json_file(path)
    except UserFileError as exc:
        raise TrainConfigError(where, str(exc)) from None
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


#: The `model.` keys a user model (`model.module`) takes besides `model.optim`; the others
#: describe the built-in decoder.
MODULE_KEYS = ("model.module", "model.module_args", "model.activations_checkpoint_granularity",
               "model.pipeline_cuts", "model.encoder_seq_length")


def module_model(get: Callable[[str], object], raw: dict[str, object], base_dir: str
                 ) -> ModuleModelConfig | None:
    """The user model `model.module` names (None when the key is absent); TrainConfigError
    for a malformed name, a missing file, or a key of the built-in decoder beside it."""
    text = get("model.module")
    if text is None:
        return None
    if raw.get("model.onnx_path") is not None:
        raise TrainConfigError("model.module", "and model.onnx_path name two models: keep one")
    decoder_keys = sorted(k for k, v in raw.items() if k.startswith("model.") and v is not None
                          and not k.startswith("model.optim.") and k not in MODULE_KEYS)
    if decoder_keys:
        raise TrainConfigError(decoder_keys[0], "is a key of the built-in decoder; a "
                                                "model.module takes its sizes from "
                                                "model.module_args")
    path, sep, function = str(text).rpartition(":")
    if not sep or not path or not function.isidentifier():
        raise TrainConfigError("model.module", f"{text!r} is not FILE.py:FUNCTION (the "
                                               "function that builds the model)")
    full = resolve_path(path, base_dir)
    if not os.path.isfile(full):
        raise TrainConfigError("model.module", f"no such file: {full}")
    args = get("model.module_args") or {}
    assert isinstance(args, dict)
    recompute = get("model.activations_checkpoint_granularity")
    cuts = get("model.pipeline_cuts") or ()
    return ModuleModelConfig(full, function, tuple(args.items()),
                             recompute if isinstance(recompute, str) else None,
                             tuple(cuts))  # type: ignore[arg-type]
