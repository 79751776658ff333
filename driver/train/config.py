"""`load_config(path) -> TrainConfig`: an NxD Training YAML file as frozen dataclasses.

The file is read with PyYAML's safe loader, its size and nesting bounded
(`backend.userfiles.structured`); its keys are sorted into those nxcc acts on,
those NxD has that nxcc ignores (`TrainConfig.ignored_keys`, for one warning line) and the
rest, refused with the nearest valid name (`config_keys`, `yaml_tree`). Values are checked
against their types and ranges (`values`), sizes against each other (`config_checks`).
Every problem raises `TrainConfigError` (`ERROR: [NCC_ETRN001] <key path>: <what>`) before
anything is written. Input paths (`data.train_dir`, `model.model_config`,
`model.onnx_path`, `exp_manager.resume_from_checkpoint`) are taken from the YAML file's folder
when relative; `exp_manager.exp_dir` (an output) from the working directory,
`nemo_experiments/<name>` when null as NeMo does.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from nxcc.driver.train.config_checks import check_sizes, parse_cuts
from nxcc.driver.train.config_data import data_config
from nxcc.driver.train.config_keys import ACTED, NEUTRAL
from nxcc.driver.train.config_model import (
    ARCHITECTURE_KEYS,
    ModelConfig,
    OnnxModelConfig,
    architecture_of,
    family_of,
    model_values,
    module_model,
    resolve_path,
)
from nxcc.driver.train.config_types import (
    DataConfig,
    DistributedConfig,
    ExpManagerConfig,
    OptimConfig,
    TrainConfig,
    TrainerConfig,
)
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.lr_schedule import SchedConfig
from nxcc.driver.train.overrides import apply_overrides
from nxcc.driver.train.precision import MANUAL_KEYS, precision_of
from nxcc.driver.train.tokenizer import Vocabulary, padded_vocab_size, read_vocabulary
from nxcc.driver.train.values import convert
from nxcc.driver.train.yaml_tree import read_tree, resolve, sort_keys

#: Values of keys a file leaves out (NeMo's / PyTorch Lightning's defaults where NxD has one).
DEFAULTS: dict[str, object] = {
    "name": "nxcc_train", "seed": 1234, "model_source": "megatron",
    "trainer.num_nodes": 1, "trainer.log_every_n_steps": 50,
    "exp_manager.resume_if_exists": False, "exp_manager.create_checkpoint_callback": False,
    "distributed_strategy.tensor_model_parallel_size": 1,
    "distributed_strategy.pipeline_model_parallel_size": 1,
    "distributed_strategy.zero1": False, "distributed_strategy.sequence_parallel": False,
    "distributed_strategy.kv_replicator": 1, "data.micro_batch_size": 1,
    "model.optim.weight_decay": 0.0, "model.optim.betas": [0.9, 0.999],
    "model.optim.eps": 1e-8, "model.optim.momentum": 0.0, "model.optim.nesterov": False,
    "model.optim.sched.name": "constant", "model.optim.sched.warmup_steps": 0,
    "model.optim.sched.min_lr": 0.0, "model.optim.sched.constant_steps": 0,
    "precision.type": "fp32",
}

REQUIRED = ("trainer.devices", "trainer.max_steps", "data.global_batch_size",
            "model.optim.name", "model.optim.lr")


class _Values:
    """The acted-on keys of one file, interpolations resolved and types checked."""

    def __init__(self, path: str, overrides: tuple[str, ...] = ()) -> None:
        tree = read_tree(path)
        apply_overrides(tree, overrides)
        keys = sort_keys(tree)
        self.tree = tree
        self.ignored = tuple(keys.ignored)
        self.raw = {p: resolve(tree, p, v) for p, v in keys.acted.items()}
        for p, v in keys.neutral.items():
            check_neutral(p, resolve(tree, p, v))
        self.base_dir = os.path.dirname(os.path.abspath(path))

    def get(self, path: str) -> Any:
        """The value of key `path`, of the type its `Spec` in ACTED gives (a table the type
        checker cannot read: hence Any); TrainConfigError if it is missing or wrong."""
        value = self.raw.get(path)
        if value is None and path in DEFAULTS:
            value = DEFAULTS[path]
        if value is None and path in REQUIRED:
            raise TrainConfigError(path, "is required")
        return convert(path, ACTED[path], value)


def check_neutral(path: str, value: object) -> None:
    """A key of a feature nxcc does not build must leave it off."""
    if value is not None and value != NEUTRAL[path]:
        raise TrainConfigError(path, f"{value!r} is not supported: nxcc builds this feature "
                                     f"only off ({NEUTRAL[path]!r})")


def load_config(path: str, overrides: tuple[str, ...] = (), plan: bool = False
                ) -> TrainConfig:
    """The run `path` describes, with `overrides` (`key.path=value`, as NxD's command line
    takes them) applied; TrainConfigError for the first problem found. With `plan` (`train
    --plan`, which reads no data) the data block need not say where the data is
    (`data.train_dir` is then None)."""
    v = _Values(path, overrides)
    trainer = TrainerConfig(*(v.get(f"trainer.{k}") for k in (
        "devices", "num_nodes", "max_steps", "log_every_n_steps", "gradient_clip_val",
        "lnc")))
    tp = v.get("distributed_strategy.tensor_model_parallel_size")
    pp = v.get("distributed_strategy.pipeline_model_parallel_size")
    assert isinstance(tp, int) and isinstance(pp, int)
    world = trainer.world_size
    if world % (tp * pp):
        raise TrainConfigError(
            "distributed_strategy.tensor_model_parallel_size",
            f"trainer.devices x trainer.num_nodes = {world} ranks is not divisible by "
            f"tensor_model_parallel_size x pipeline_model_parallel_size = {tp} x {pp} "
            f"= {tp * pp}")
    distributed = DistributedConfig(tp, pp, world // (tp * pp), *(
        v.get(f"distributed_strategy.{k}") for k in ("zero1", "sequence_parallel",
                                                     "kv_replicator")))
    name = str(v.get("name"))
    data = _data(v, v.get("model.module") is None, needs_data=not plan)
    vocabulary = read_vocabulary(data.tokenizer) if data.tokenizer is not None else None
    module = module_model(v.get, v.raw, v.base_dir)
    model, onnx = (None, None) if module is not None else \
        _model(v, pp, data.seq_length, _vocab_size(v, vocabulary, tp))
    config = TrainConfig(
        name=name, seed=v.get("seed"), trainer=trainer, exp_manager=_exp_manager(v, name),
        distributed=distributed, data=data, model=model, onnx=onnx, optim=_optim(v, trainer),
        precision=str(v.get("precision.type")), compiler_flags=_flags(v),
        compiler_cache_url=v.get("compiler_cache_url"), source=os.path.abspath(path),
        ignored_keys=_ignored(v, onnx), recipe=precision_of(
            str(v.get("precision.type")),
            {k: v.get(f"precision.{k}") for k in MANUAL_KEYS}),
        vocabulary=vocabulary, module=module)
    check_sizes(config)
    return config


def _ignored(v: _Values, onnx: OnnxModelConfig | None) -> tuple[str, ...]:
    """The keys the warning lists: NxD's that nxcc does not act on, and the recomputation
    granularity of an ONNX model (the engine does not recompute inside one)."""
    key = "model.activations_checkpoint_granularity"
    if onnx is not None and onnx.activations_checkpoint_granularity is not None:
        return (*v.ignored, key)
    return v.ignored


def _exp_manager(v: _Values, name: str) -> ExpManagerConfig:
    exp_dir = v.get("exp_manager.exp_dir") or os.path.join("nemo_experiments", name)
    start = v.get("exp_manager.resume_from_checkpoint")
    return ExpManagerConfig(
        os.path.abspath(os.path.expanduser(str(exp_dir))),
        v.get("exp_manager.resume_if_exists"), v.get("exp_manager.create_checkpoint_callback"),
        v.get("exp_manager.checkpoint_callback_params.every_n_train_steps"),
        bool(v.get("exp_manager.create_tensorboard_logger")),
        resolve_path(str(start), v.base_dir) if start else None)


def _vocab_size(v: _Values, vocabulary: Vocabulary | None, tp: int) -> int | None:
    """The vocabulary the decoder is built with when the file gives none
    (`model.vocab_size`, or an HF config.json's, win): the tokenizer's padded as Megatron
    pads it, to a multiple of `model.make_vocab_size_divisible_by` (default 128) x TP."""
    if vocabulary is None or v.get("model_source") == "hf":
        return None
    divisible = v.get("model.make_vocab_size_divisible_by") or 128
    assert isinstance(divisible, int)
    return padded_vocab_size(vocabulary.size, divisible, tp)


def _data(v: _Values, needs_seq: bool = True, needs_data: bool = True) -> DataConfig:
    """The `data` block; a user model (`needs_seq` False) may leave the sequence length out
    (0): its inputs say their shapes; a plan (`needs_data` False) reads no data, so the
    block need not say where it is."""
    seq = v.get("data.seq_length")
    encoder = v.get("model.encoder_seq_length")
    if seq is not None and encoder is not None and seq != encoder:
        raise TrainConfigError("data.seq_length", f"{seq} differs from "
                                                  f"model.encoder_seq_length {encoder}")
    seq = seq if seq is not None else encoder
    if seq is None and needs_seq:
        raise TrainConfigError("data.seq_length", "is required (or model.encoder_seq_length)")
    seq = 0 if seq is None else seq
    return data_config(v.get, v.base_dir, seq, needs_data)


def _optim(v: _Values, trainer: TrainerConfig) -> OptimConfig:
    name = str(v.get("model.optim.name"))
    sched_max = v.get("model.optim.sched.max_steps") or trainer.max_steps
    sched = SchedConfig(v.get("model.optim.sched.name"), v.get("model.optim.sched.warmup_steps"),
                        sched_max, v.get("model.optim.sched.min_lr"),
                        v.get("model.optim.sched.constant_steps"))
    betas = v.get("model.optim.betas")
    assert isinstance(betas, tuple)
    if not all(0.0 <= b < 1.0 for b in betas):
        raise TrainConfigError("model.optim.betas", f"each must lie in [0, 1), got {betas}")
    return OptimConfig("sgd" if name == "sgd" else "adamw", v.get("model.optim.lr"),
                       v.get("model.optim.weight_decay"), betas, v.get("model.optim.eps"),
                       v.get("model.optim.momentum"), v.get("model.optim.nesterov"), sched)


def _flags(v: _Values) -> tuple[str, ...]:
    text = v.get("compiler_flags")
    try:
        return tuple(shlex.split(str(text))) if text else ()
    except ValueError as exc:
        raise TrainConfigError("compiler_flags", f"cannot be split into flags ({exc})") from None


def _model(v: _Values, pp: int, seq: int, tokenizer_vocab: int | None
           ) -> tuple[ModelConfig | None, OnnxModelConfig | None]:
    recompute = v.get("model.activations_checkpoint_granularity")
    onnx_path = v.get("model.onnx_path")
    if onnx_path is not None:
        return None, _onnx(v, str(onnx_path), recompute)
    values = model_values(v.raw, v.base_dir)
    if values.get("vocab_size") is None and tokenizer_vocab is not None:
        values["vocab_size"] = tokenizer_vocab
    for key in ARCHITECTURE_KEYS:  # a bad value refused naming its key, not by the decoder
        _optional(values, key)
    architecture = architecture_of(str(v.get("model_source")), values)
    family = family_of(architecture)

    def get(key: str, default: object = None) -> Any:
        value = values.get(key, default)
        if value is None:
            also = " (or data.tokenizer, whose vocabulary NxD pads)" \
                if key == "vocab_size" else ""
            raise TrainConfigError(f"model.{key}", f"is required for the built-in {family} "
                                                   f"decoder{also}")
        return convert(f"model.{key}", ACTED[f"model.{key}"], value)

    heads = get("num_attention_heads")
    hidden = get("hidden_size")
    ffn = _ffn_size(values, family, hidden)
    cuts = tuple(v.get("model.pipeline_cuts") or ())
    num_layers = get("num_layers")
    model = ModelConfig(
        family=family, num_layers=num_layers, hidden_size=hidden, num_attention_heads=heads,
        num_kv_heads=get("num_kv_heads", heads), ffn_hidden_size=ffn,
        vocab_size=get("vocab_size"),
        max_position_embeddings=get("max_position_embeddings", seq),
        rope_theta=get("rope_theta", 10000.0), layernorm_epsilon=get("layernorm_epsilon", 1e-5),
        has_bias=get("has_bias", family == "gpt"),
        share_embeddings_and_output_weights=get("share_embeddings_and_output_weights",
                                                family == "gpt"),
        init_method_std=get("init_method_std", 0.02),
        activations_checkpoint_granularity=recompute, pipeline_cuts=cuts,
        cut_after=parse_cuts(cuts, num_layers, pp),
        pipeline_split=str(_optional(values, "pipeline_split") or "nxd"),
        sliding_window_size=_optional(values, "sliding_window_size"),
        architecture=architecture)
    return model, None


def _optional(values: dict[str, object], key: str) -> Any:
    """model.`key` checked against its spec (of the type it gives), or None when absent or
    null."""
    value = values.get(key)
    return None if value is None else convert(f"model.{key}", ACTED[f"model.{key}"], value)


def _ffn_size(values: dict[str, object], family: str, hidden: object) -> int:
    ffn = values.get("ffn_hidden_size")
    inter = values.get("intermediate_size")
    if ffn is not None and inter is not None and ffn != inter:
        raise TrainConfigError("model.ffn_hidden_size", f"{ffn} differs from "
                                                        f"model.intermediate_size {inter}")
    key = "model.ffn_hidden_size" if ffn is not None else "model.intermediate_size"
    size = ffn if ffn is not None else inter
    if size is None and family == "gpt":
        assert isinstance(hidden, int)
        return 4 * hidden
    if size is None:
        raise TrainConfigError("model.ffn_hidden_size", "is required for the built-in llama "
                                                        "decoder (or model.intermediate_size)")
    out = convert(key, ACTED[key], size)
    assert isinstance(out, int)
    return out


def _onnx(v: _Values, path: str, recompute: object) -> OnnxModelConfig:
    full = resolve_path(path, v.base_dir)
    if not os.path.isfile(full):
        raise TrainConfigError("model.onnx_path", f"no such file: {full}")
    names = []
    for key in ("model.onnx_loss_input", "model.onnx_label_input"):
        name = v.get(key)
        if name is None:
            raise TrainConfigError(key, "is required with model.onnx_path")
        names.append(str(name))
    return OnnxModelConfig(full, names[0], names[1],
                           recompute if isinstance(recompute, str) else None)
