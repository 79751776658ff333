"""`load_config`: NxD Training's YAML keys, the shrunk NxD examples, and every refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from nxcc.driver.train.config import load_config
from nxcc.driver.train.describe import describe, describe_lines
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.model_stage import decoder_config
from nxcc.driver.train.prepare import prepare_job
from tests.driver.train.train_yaml import DELETE, EXAMPLES, GPT, LLAMA, variant


def refused(path: Path, *fragments: str, overrides: tuple[str, ...] = ()) -> str:
    """The one-line message of the TrainConfigError `path` raises, checked for fragments."""
    with pytest.raises(TrainConfigError) as info:
        load_config(str(path), overrides)
    text = str(info.value)
    assert text.startswith("[NCC_ETRN001] ")
    assert "\n" not in text
    for fragment in fragments:
        assert fragment in text, text
    return text


def test_llama_example_loads_as_nxd_wrote_it() -> None:
    c = load_config(str(LLAMA))
    m = c.model
    assert m is not None and c.onnx is None
    assert (m.family, m.num_layers, m.hidden_size) == ("llama", 4, 64)
    # from the Hugging Face config.json named by model.model_config
    assert (m.num_attention_heads, m.num_kv_heads, m.ffn_hidden_size, m.vocab_size) == \
        (4, 2, 176, 256)
    assert m.rope_theta == 500000.0 and m.layernorm_epsilon == 1e-5
    assert not m.has_bias and not m.share_embeddings_and_output_weights
    d = c.distributed
    assert (d.tensor_model_parallel_size, d.pipeline_model_parallel_size,
            d.data_parallel_size) == (2, 2, 2)
    assert d.zero1 and d.sequence_parallel and d.kv_replicator == 1
    assert c.data.seq_length == 32  # model.encoder_seq_length (no data.seq_length)
    assert c.data.micro_batches_per_step(d.data_parallel_size) == 4
    assert Path(c.data.train_dir) == EXAMPLES / "data"
    assert c.optim.sched.max_steps == c.trainer.max_steps == 20  # ${trainer.max_steps}
    assert c.optim.sched.name == "LinearAnnealingWithWarmUp"
    assert c.precision == "fp32" and c.compiler_flags == ("--model-type", "transformer")
    assert m.activations_checkpoint_granularity == "selective"
    assert "model.fusions.flash_attention" in c.ignored_keys
    assert "exp_manager.create_tensorboard_logger" not in c.ignored_keys  # acted on
    assert c.exp_manager.tensorboard
    # an ignored key holding ${multiply:...} is never evaluated
    assert "exp_manager.checkpoint_callback_params.model_parallel_size" in c.ignored_keys


def test_gpt_example_loads_with_relative_interpolations() -> None:
    c = load_config(str(GPT))
    m = c.model
    assert m is not None
    assert (m.family, m.num_layers, m.num_kv_heads, m.ffn_hidden_size) == ("gpt", 2, 4, 256)
    assert m.has_bias and m.share_embeddings_and_output_weights
    assert m.max_position_embeddings == 32  # ${.encoder_seq_length}
    assert c.data.seq_length == 32  # ${model.encoder_seq_length}
    assert m.layernorm_epsilon == 1e-5  # YAML 1.1 reads '1e-5' as a string
    assert c.optim.betas == (0.9, 0.95) and c.optim.sched.min_lr == 1e-4
    assert c.distributed.data_parallel_size == 4  # 8 devices: TP2 x DP4
    assert "data.tokenizer.delimiter" in c.ignored_keys
    assert "model.hidden_dropout" in c.ignored_keys
    assert c.data.tokenizer is None  # names no file: model.vocab_size stands in
    opt = c.optim.optimizer_config()
    assert opt.name == "adamw" and opt.weight_decay == 0.01


def test_defaults_and_overrides(tmp_path: Path) -> None:
    path = variant(tmp_path, distributed_strategy__kv_replicator=DELETE,
                   exp_manager__exp_dir=None, trainer__log_every_n_steps=DELETE)
    c = load_config(str(path), ("trainer.max_steps=5", "model.optim.betas=[0.8,0.9]"))
    assert c.trainer.max_steps == 5 and c.optim.sched.max_steps == 5
    assert c.optim.betas == (0.8, 0.9)
    assert c.distributed.kv_replicator == 1 and c.trainer.log_every_n_steps == 50
    assert c.exp_manager.exp_dir.endswith("nemo_experiments/hf_llama")


@pytest.mark.parametrize(("key", "value", "fragments"), [
    ("trainer__max_step", 3, ("trainer.max_step:", "did you mean 'trainer.max_steps'")),
    ("distributed_strategy__tensor_parallel_size", 2,
     ("did you mean 'distributed_strategy.tensor_model_parallel_size'",)),
    ("model__optim__weight_decy", 0.1, ("did you mean 'model.optim.weight_decay'",)),
    ("trainr", {"devices": 8}, ("trainr:", "did you mean 'trainer'",)),
    ("model__zzz_qqq", 1, ("model.zzz_qqq:", "no similar key")),
])
def test_unknown_key_names_the_nearest(tmp_path: Path, key: str, value: object,
                                        fragments: tuple[str, ...]) -> None:
    refused(variant(tmp_path, **{key: value}), "is not a key of NxD Training", *fragments)


@pytest.mark.parametrize(("key", "value", "fragments"), [
    ("trainer__devices", "eight", ("trainer.devices:", "expected an integer", "'eight'")),
    ("trainer__devices", 2.5, ("trainer.devices:", "expected an integer")),
    ("trainer__max_steps", 0, ("trainer.max_steps:", "must be >= 1, got 0")),
    ("distributed_strategy__zero1", "yes", ("distributed_strategy.zero1:", "true or false")),
    ("model__optim__lr", "fast", ("model.optim.lr:", "expected a number")),
    ("model__optim__name", "lamb", ("model.optim.name:", "one of adamw, adamw_fp32OptState, sgd")),
    ("model__optim__betas", [0.9], ("model.optim.betas:", "two numbers")),
    ("model__optim__betas", [0.9, 1.5], ("model.optim.betas:", "[0, 1)")),
    ("precision__type", "bf16", ("precision.type:", "fp32, autocast, mixed_precision, "
                                                  "mixed_precisionSR, bf16SR, manual")),
    ("model__activations_checkpoint_granularity", "most",
     ("model.activations_checkpoint_granularity:", "selective, full")),
    ("trainer", 5, ("trainer:", "expected a block of keys")),
    ("trainer__devices", {"a": 1}, ("trainer.devices:", "expected a value")),
    ("trainer__devices", None, ("trainer.devices:", "is required")),
    ("model__optim__sched__name", "NoamAnnealing", ("model.optim.sched.name:",)),
])
def test_wrong_type_or_value_names_the_key(tmp_path: Path, key: str, value: object,
                                           fragments: tuple[str, ...]) -> None:
    refused(variant(tmp_path, **{key: value}), *fragments)


@pytest.mark.parametrize(("changes", "fragments"), [
    ({"trainer__devices": 6}, ("6 ranks", "2 x 2 = 4")),
    ({"trainer__devices": 4, "trainer__num_nodes": 3, "distributed_strategy__pipeline_model_parallel_size": 1,
      "distributed_strategy__tensor_model_parallel_size": 8}, ("12 ranks", "8 x 1 = 8")),
    ({"model__num_attention_heads": 6, "model__num_kv_heads": 6, "model__hidden_size": 60,
      "distributed_strategy__tensor_model_parallel_size": 4, "trainer__devices": 16},
     ("model.num_attention_heads:", "num_attention_heads 6", "tensor_model_parallel_size 4")),
    ({"model__num_kv_heads": 1}, ("distributed_strategy.kv_replicator:", "1 x 1 = 1",
                                  "tensor_model_parallel_size 2")),
    ({"model__num_kv_heads": 3}, ("model.num_attention_heads:", "num_attention_heads 4",
                                  "num_kv_heads 3")),
    ({"data__global_batch_size": 6, "data__micro_batch_size": 2},
     ("data.global_batch_size:", "global_batch_size 6", "2 x 2 = 4")),
    ({"model__num_layers": 1}, ("model.num_layers:", "num_layers 1",
                                "too few for pipeline_model_parallel_size 2")),
    ({"model__vocab_size": 255}, ("model.vocab_size:", "255", "tensor_model_parallel_size 2")),
    ({"model__intermediate_size": 175}, ("model.ffn_hidden_size:", "175", "2")),
    ({"model__encoder_seq_length": 33, "model__max_position_embeddings": 64},
     ("distributed_strategy.sequence_parallel:", "seq_length 33",
      "tensor_model_parallel_size 2")),
    ({"model__hidden_size": 66}, ("model.hidden_size:", "hidden_size 66",
                                  "num_attention_heads 4")),
    ({"data__seq_length": 16}, ("data.seq_length:", "16", "model.encoder_seq_length 32")),
    ({"model__encoder_seq_length": 64}, ("data.seq_length:", "seq_length 64",
                                         "max_position_embeddings 32")),
])
def test_sizes_that_do_not_divide_name_both_numbers(tmp_path: Path, changes: dict,
                                                    fragments: tuple[str, ...]) -> None:
    refused(variant(tmp_path, **changes), *fragments)


def test_kv_replicator_covers_tp_beyond_the_kv_heads(tmp_path: Path) -> None:
    base = {"distributed_strategy__tensor_model_parallel_size": 4, "trainer__devices": 16}
    refused(variant(tmp_path, **base), "2 x 1 = 2", "tensor_model_parallel_size 4")
    c = load_config(str(variant(tmp_path, distributed_strategy__kv_replicator=2, **base)))
    assert c.distributed.kv_replicator == 2 and c.model is not None
    assert c.model.num_kv_heads == 2


def test_interpolations(tmp_path: Path) -> None:
    ok = variant(tmp_path, filename="ok.yaml", trainer__max_steps=7,
                 model__optim__sched__max_steps="${trainer.max_steps}",
                 model__optim__sched__warmup_steps="${..weight_decay_steps}",
                 model__optim__weight_decay_steps=3)
    refused(ok, "model.optim.weight_decay_steps:", "did you mean 'model.optim.weight_decay'")
    ok = variant(tmp_path, filename="ok.yaml", trainer__max_steps=7, name="run-${seed}",
                 model__optim__sched__warmup_steps="${....trainer.log_every_n_steps}")
    c = load_config(str(ok))
    assert c.name == "run-1234" and c.optim.sched.warmup_steps == 1
    refused(variant(tmp_path, trainer__max_steps="${multiply:2, 3}"),
            "trainer.max_steps:", "only ${a.b} references")
    refused(variant(tmp_path, trainer__max_steps="${trainer.nothing_here}"),
            "trainer.max_steps:", "names no key", "trainer.nothing_here")
    refused(variant(tmp_path, trainer__max_steps="${model.optim.sched.max_steps}"),
            "refers to itself")
    refused(variant(tmp_path, trainer__max_steps="${...x}"), "climbs above the top")


def test_refused_blocks_and_neutral_keys(tmp_path: Path) -> None:
    refused(variant(tmp_path, model__moe={"num_experts": 8}), "model.moe:", "mixture-of-experts")
    refused(variant(tmp_path, model_alignment_strategy={"sft": {"packing": True}}),
            "model_alignment_strategy:", "DPO")
    refused(variant(tmp_path, distributed_strategy__context_parallel_size=2),
            "distributed_strategy.context_parallel_size:", "2", "only off (1)")
    c = load_config(str(variant(tmp_path, distributed_strategy__context_parallel_size=1,
                                distributed_strategy__virtual_pipeline_model_parallel_size=1)))
    assert c.distributed.tensor_model_parallel_size == 2


def test_sliding_window(tmp_path: Path) -> None:
    """NxD's model.sliding_window_size (Mistral's sliding_window in an HF config.json)
    reaches the decoder; null is plain causal attention; 0 is refused."""
    c = load_config(str(variant(tmp_path, GPT, model__sliding_window_size=16)))
    assert c.model is not None and c.model.sliding_window_size == 16
    info = describe(prepare_job(c, write_cache=False))  # what --dry-run prints
    assert info["model"]["sliding_window"] == 16  # type: ignore[index]
    assert any(line.endswith(", sliding window 16") for line in describe_lines(info))
    c = load_config(str(variant(tmp_path, GPT, model__sliding_window_size=None)))
    assert c.model is not None and c.model.sliding_window_size is None
    refused(variant(tmp_path, GPT, model__sliding_window_size=0),
            "model.sliding_window_size:", "0")


def test_model_families(tmp_path: Path) -> None:
    llama = {"model__position_embedding_type": "rope", "model__normalization": "rmsnorm",
             "model__activation": "swiglu"}
    c = load_config(str(variant(tmp_path, GPT, **llama)))
    assert c.model is not None and c.model.family == "llama"
    assert c.model.has_bias  # the file's has_bias: True wins over the family's default
    c = load_config(str(variant(tmp_path, GPT, model__has_bias=DELETE, **llama)))
    assert c.model is not None and not c.model.has_bias
    # the parts mix as NxD builds them: GPT's positions and norm with a SwiGLU MLP
    c = load_config(str(variant(tmp_path, GPT, model__activation="swiglu")))
    assert c.model is not None and c.model.family == "gpt"
    assert c.model.architecture == ("learned_absolute", "layernorm", "swiglu")
    refused(variant(tmp_path, GPT, model__activation="geglu"), "model.activation:", "geglu")
    # what the decoder is built with: the YAML's parts and has_bias (which a Llama's
    # default of no biases used to override)
    cfg = decoder_config(c.model)
    assert (cfg.position, cfg.normalization, cfg.activation) == c.model.architecture
    assert cfg.swiglu and cfg.layer_norm and not cfg.rotary
    c = load_config(str(variant(tmp_path, GPT, model__has_bias=True, **llama)))
    assert c.model is not None and decoder_config(c.model).has_bias
    c = load_config(str(variant(tmp_path, GPT, model__has_bias=False)))
    assert c.model is not None and not decoder_config(c.model).has_bias
    refused(variant(tmp_path, GPT, model__vocab_size=DELETE), "model.vocab_size:",
            "required for the built-in gpt decoder")
    refused(variant(tmp_path, GPT, model__ffn_hidden_size=128, model__intermediate_size=256),
            "model.ffn_hidden_size:", "128", "256")


def test_hf_config_json(tmp_path: Path) -> None:
    refused(variant(tmp_path, model__model_config=str(tmp_path / "missing.json")),
            "model.model_config:", "cannot read")
    bad = tmp_path / "gelu.json"
    bad.write_text('{"hidden_act": "gelu", "vocab_size": 256}')
    refused(variant(tmp_path, model__model_config=str(bad)), "hidden_act 'gelu'")
    # the YAML's keys win over config.json's
    c = load_config(str(variant(tmp_path, model__num_attention_heads=8, model__num_kv_heads=8)))
    assert c.model is not None and (c.model.num_attention_heads, c.model.num_kv_heads) == (8, 8)
    mistral = tmp_path / "mistral.json"  # Mistral's config.json: Llama's with a window
    mistral.write_text((EXAMPLES / "tiny_llama_config.json").read_text()
                       .replace('"model_type": "llama",', '"sliding_window": 8,'))
    c = load_config(str(variant(tmp_path, model__model_config=str(mistral))))
    assert c.model is not None and c.model.sliding_window_size == 8


def test_pipeline_cuts(tmp_path: Path) -> None:
    c = load_config(str(variant(tmp_path, model__pipeline_cuts=["model.layers.0"],
                                model__num_layers=5)))
    assert c.model is not None and c.model.cut_after == (0,)
    refused(variant(tmp_path, model__pipeline_cuts=["model.layers.1", "model.layers.2"]),
            "model.pipeline_cuts:", "2 cut(s)", "PP - 1 = 1")
    refused(variant(tmp_path, model__pipeline_cuts=["model.layers.3"]), "cuts must rise")
    refused(variant(tmp_path, model__pipeline_cuts=["decoder.block"]), "does not name a layer")


def test_onnx_model(tmp_path: Path) -> None:
    onnx = Path(__file__).parent / "data" / "gpt.onnx"
    c = load_config(str(variant(tmp_path, model__onnx_path=str(onnx),
                                model__onnx_loss_input="logits",
                                model__onnx_label_input="labels",
                                distributed_strategy__tensor_model_parallel_size=1,
                                distributed_strategy__pipeline_model_parallel_size=1)))
    assert c.model is None and c.onnx is not None and c.onnx.loss_input == "logits"
    refused(variant(tmp_path, model__onnx_path=str(onnx), model__onnx_loss_input="logits",
                    model__onnx_label_input="labels"),
            "tensor_model_parallel_size:", "data parallelism only")
    refused(variant(tmp_path, model__onnx_path=str(onnx)), "model.onnx_loss_input:",
            "required with model.onnx_path")
    refused(variant(tmp_path, model__onnx_path=str(tmp_path / "no.onnx"),
                    model__onnx_loss_input="a", model__onnx_label_input="b"),
            "model.onnx_path:", "no such file")


def test_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer:\n  devices: [1, 2\n")
    refused(bad, "bad.yaml:", "is not valid YAML at line")
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    refused(listing, "holds list, not a mapping")
    refused(tmp_path / "absent.yaml", "absent.yaml:", "cannot read")
    python = tmp_path / "python.yaml"
    python.write_text("name: !!python/object/apply:os.system ['true']\n")
    refused(python, "is not valid YAML")  # safe_load builds no Python objects


def test_nemo_cosine_schedule() -> None:
    c = load_config(str(GPT))
    s = c.optim.sched  # CosineAnnealing, warm-up 2, max_steps 20 (trainer's), min_lr 1e-4
    lr = c.optim.lr
    assert (s.name, s.warmup_steps, s.max_steps, s.constant_steps) == ("CosineAnnealing", 2,
                                                                       20, 0)
    assert [s.lr_at(lr, k) for k in range(3)] == pytest.approx([lr / 3, 2 * lr / 3, lr])
    assert s.lr_at(lr, 11) == pytest.approx(1e-4 + (lr - 1e-4) * 0.5)
    assert s.lr_at(lr, 20) == pytest.approx(1e-4) and s.lr_at(lr, 30) == pytest.approx(1e-4)
    assert s.as_schedule(lr) is None


def test_nemo_cosine_with_constant_steps(tmp_path: Path) -> None:
    c = load_config(str(variant(tmp_path, GPT, model__optim__sched__constant_steps=8)))
    s, lr = c.optim.sched, c.optim.lr  # decay over 20 - (8 + 2) = 10 steps, then held
    assert s.lr_at(lr, 7) == pytest.approx(1e-4 + (lr - 1e-4) * 0.5)
    assert s.lr_at(lr, 12) == pytest.approx(1e-4) and s.lr_at(lr, 15) == pytest.approx(1e-4)
    # NxD's megatron_gpt_config holds more constant steps than max_steps: it loads, and
    # NeMo's rule gives min_lr after the warm-up
    c = load_config(str(variant(tmp_path, GPT, model__optim__sched__constant_steps=80000)))
    assert c.optim.sched.lr_at(lr, 3) == pytest.approx(1e-4)


def test_linear_schedule_is_the_compiled_one() -> None:
    c = load_config(str(LLAMA))
    s, lr = c.optim.sched, c.optim.lr  # LinearAnnealingWithWarmUp, warm-up 2, max_steps 20
    assert [s.lr_at(lr, k) for k in (0, 1, 2, 11, 20, 25)] == pytest.approx(
        [0.0, lr / 2, lr, lr / 2, 0.0, 0.0])
    compiled = s.as_schedule(lr)
    assert compiled is not None
    for k in range(25):
        assert lr * compiled.factor(k) == pytest.approx(s.lr_at(lr, k))


@pytest.mark.parametrize("text", ["seed: " + "[" * 5000 + "]" * 5000 + "\n",
                                  "model: {" + "a: {" * 3000 + "}" * 3001 + "\n"],
                         ids=["flow-sequences", "flow-mappings"])
def test_yaml_nested_too_deep_is_one_error(tmp_path: Path, text: str) -> None:
    """(Found by the yaml fuzz kind: PyYAML recursing once per level ended in a
    RecursionError traceback.)"""
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    refused(path, "is nested too deep")
