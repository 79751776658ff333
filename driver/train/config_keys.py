"""The keys of an NxD Training YAML file, in four sets.

* `ACTED`: keys nxcc reads, with the type and range each must have (`Spec`).
* `IGNORED`: keys NxD Training has (taken from its example configs and its configuration
  reference) that nxcc accepts and does not act on; a file using them gets one warning line
  listing them. `IGNORED_SUBTREES` are whole blocks of that kind.
* `NEUTRAL`: NxD keys for features nxcc does not build, accepted only at the value that
  turns the feature off (`context_parallel_size: 1`). `REFUSED_SUBTREES` are NxD blocks
  that change what is trained (mixture of experts, DPO/ORPO/SFT/LoRA): refused.
* anything else is not a key of NxD Training: refused with the nearest valid name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    """What a key's value must be. `kind`: int, float, bool, str, path, enum, floats2
    (two numbers), strs (a list of strings), batches (a count or a fraction), mapping (a
    block of keys taken whole: a user model's arguments), any (checked by the key's own
    reader). `minimum` bounds numbers from below;
    `nullable` lets YAML's null stand for "not given"."""

    kind: str
    minimum: float | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False


INT1 = Spec("int", minimum=1)
INT0 = Spec("int", minimum=0)
INT1_OR_NULL = Spec("int", minimum=1, nullable=True)
BOOL = Spec("bool")
POS_FLOAT = Spec("float", minimum=0.0)
PATH = Spec("path", nullable=True)

#: NxD optimizer names nxcc runs (adamw_fp32OptState is AdamW with fp32 state, which is
#: what nxcc keeps anyway).
OPTIMIZER_NAMES = ("adamw", "adamw_fp32OptState", "sgd")
#: NxD (NeMo) schedule names nxcc runs.
SCHED_NAMES = ("LinearAnnealingWithWarmUp", "CosineAnnealing", "constant")
PRECISIONS = ("fp32", "autocast", "mixed_precision", "mixed_precisionSR", "bf16SR", "manual")
FLAG = Spec("flag", nullable=True)
#: NeMo's tokenizer libraries whose vocabulary nxcc reads (`data.tokenizer.library`).
TOKENIZER_LIBRARIES = ("megatron", "huggingface", "sentencepiece")

ACTED: dict[str, Spec] = {
    "name": Spec("str"),
    "seed": INT0,
    "model_source": Spec("enum", choices=("megatron", "hf")),
    "trainer.devices": INT1,
    "trainer.num_nodes": INT1,
    # NxD's trn2 configs: physical NeuronCores per logical core (`train.instance`)
    "trainer.lnc": INT1_OR_NULL,
    "trainer.max_steps": INT1,
    "trainer.log_every_n_steps": INT1,
    "trainer.gradient_clip_val": Spec("float", minimum=0.0, nullable=True),
    "exp_manager.exp_dir": PATH,
    "exp_manager.resume_if_exists": BOOL,
    "exp_manager.create_checkpoint_callback": BOOL,
    "exp_manager.checkpoint_callback_params.every_n_train_steps": INT1_OR_NULL,
    "distributed_strategy.tensor_model_parallel_size": INT1,
    "distributed_strategy.pipeline_model_parallel_size": INT1,
    "distributed_strategy.zero1": BOOL,
    "distributed_strategy.sequence_parallel": BOOL,
    "distributed_strategy.kv_replicator": INT1,
    "data.micro_batch_size": INT1,
    "data.global_batch_size": INT1,
    "data.seq_length": INT1_OR_NULL,
    "data.train_dir": PATH,
    "data.val_dir": PATH,
    "data.data_prefix": Spec("any", nullable=True),
    "data.splits_string": Spec("str", nullable=True),
    "data.index_mapping_dir": PATH,
    "data.eod_mask_loss": Spec("bool", nullable=True),
    "data.reset_position_ids": Spec("bool", nullable=True),
    "data.reset_attention_mask": Spec("bool", nullable=True),
    "data.validation_drop_last": Spec("bool", nullable=True),
    "data.no_seqlen_plus_one_input_tokens": Spec("bool", nullable=True),
    "data.tokenizer.library": Spec("enum", choices=TOKENIZER_LIBRARIES, nullable=True),
    "data.tokenizer.type": Spec("str", nullable=True),
    "data.tokenizer.model": PATH,
    "data.tokenizer.vocab_file": PATH,
    "data.tokenizer.merge_file": PATH,
    "trainer.val_check_interval": INT1_OR_NULL,
    "trainer.limit_val_batches": Spec("batches", minimum=0, nullable=True),
    "exp_manager.create_tensorboard_logger": Spec("bool", nullable=True),
    "exp_manager.resume_from_checkpoint": PATH,
    "model.make_vocab_size_divisible_by": INT1_OR_NULL,
    "model.weight_init_only": Spec("bool", nullable=True),
    "model.model_config": PATH,
    "model.encoder_seq_length": INT1_OR_NULL,
    "model.num_layers": INT1_OR_NULL,
    "model.hidden_size": INT1_OR_NULL,
    "model.num_attention_heads": INT1_OR_NULL,
    "model.num_kv_heads": INT1_OR_NULL,
    "model.sliding_window_size": INT1_OR_NULL,
    "model.ffn_hidden_size": INT1_OR_NULL,
    "model.intermediate_size": INT1_OR_NULL,
    "model.vocab_size": INT1_OR_NULL,
    "model.max_position_embeddings": INT1_OR_NULL,
    "model.rope_theta": Spec("float", minimum=0.0, nullable=True),
    "model.normalization": Spec("enum", choices=("layernorm", "rmsnorm"), nullable=True),
    "model.activation": Spec("enum", choices=("gelu", "swiglu"), nullable=True),
    "model.position_embedding_type": Spec("enum", choices=("learned_absolute", "rope"),
                                          nullable=True),
    "model.has_bias": Spec("bool", nullable=True),
    "model.share_embeddings_and_output_weights": Spec("bool", nullable=True),
    "model.layernorm_epsilon": Spec("float", minimum=0.0, nullable=True),
    "model.init_method_std": Spec("float", minimum=0.0, nullable=True),
    "model.activations_checkpoint_granularity": Spec("enum", choices=("selective", "full"),
                                                     nullable=True),
    "model.pipeline_cuts": Spec("strs", nullable=True),
    # nxcc's own: how stages are cut without pipeline_cuts (`train.cuts`)
    "model.pipeline_split": Spec("enum", choices=("nxd", "flops"), nullable=True),
    "model.onnx_path": PATH,
    "model.module": Spec("str", nullable=True),
    "model.module_args": Spec("mapping", nullable=True),
    "model.onnx_loss_input": Spec("str", nullable=True),
    "model.onnx_label_input": Spec("str", nullable=True),
    "model.optim.name": Spec("enum", choices=OPTIMIZER_NAMES),
    "model.optim.lr": Spec("float", minimum=0.0),
    "model.optim.weight_decay": POS_FLOAT,
    "model.optim.betas": Spec("floats2"),
    "model.optim.eps": POS_FLOAT,
    "model.optim.momentum": POS_FLOAT,
    "model.optim.nesterov": BOOL,
    "model.optim.sched.name": Spec("enum", choices=SCHED_NAMES),
    "model.optim.sched.warmup_steps": INT0,
    "model.optim.sched.max_steps": INT1_OR_NULL,
    "model.optim.sched.min_lr": POS_FLOAT,
    "model.optim.sched.constant_steps": INT0,
    "precision.type": Spec("enum", choices=PRECISIONS),
    "precision.master_weights": FLAG,
    "precision.fp32_grad_acc": FLAG,
    "precision.xla_use_bf16": FLAG,
    "precision.xla_downcast_bf16": FLAG,
    "precision.neuron_rt_stochastic_rounding_en": FLAG,
    "compiler_flags": Spec("str", nullable=True),
    "compiler_cache_url": PATH,
}

#: NxD keys for features nxcc does not build, and the value that leaves them off.
NEUTRAL: dict[str, object] = {
    "distributed_strategy.virtual_pipeline_model_parallel_size": 1,
    "distributed_strategy.context_parallel_size": 1,
    "distributed_strategy.expert_model_parallel_size": 1,
    "model.fusions.ring_attention": False,
    "model.rotary_percentage": 1,
    "model.transformer_block_type": "pre_ln",
    "data.packing": False,
    "data.data_impl": "mmap",
    "data.dataloader_type": "single",
}

#: NxD blocks that change the model or objective nxcc would train: refused, with why.
REFUSED_SUBTREES: dict[str, str] = {
    "model.moe": "mixture-of-experts layers are not built by nxcc (dense decoders only)",
    "model_alignment_strategy": "DPO, ORPO, SFT and LoRA are not run by nxcc (pre-training "
                                "on a token stream only)",
}

#: NxD blocks accepted and ignored whole.
IGNORED_SUBTREES: tuple[str, ...] = ()

IGNORED: frozenset[str] = frozenset("""
aync_exec_max_inflight_requests bucket_size_collectives neuron_rt_exec_timeout
neuron_experimental_compress_rg
trainer.max_epochs trainer.check_val_every_n_epoch
trainer.num_sanity_val_steps trainer.limit_test_batches
trainer.sequential_move_factor trainer.max_time trainer.precision trainer.accelerator
trainer.logger trainer.enable_checkpointing trainer.use_distributed_sampler
exp_manager.log_local_rank_0_only
exp_manager.create_wandb_logger exp_manager.wandb_logger_kwargs
exp_manager.explicit_log_dir exp_manager.exp_log_dir exp_manager.name exp_manager.version
exp_manager.resume_ignore_no_checkpoint exp_manager.log_parameter_norm
exp_manager.log_gradient_norm exp_manager.enable_recovery_time_instrumentation
exp_manager.save_xser exp_manager.load_xser exp_manager.save_bf16
exp_manager.async_checkpointing exp_manager.ckpt_ptl_version
exp_manager.checkpoint_callback_params.monitor exp_manager.checkpoint_callback_params.save_top_k
exp_manager.checkpoint_callback_params.mode exp_manager.checkpoint_callback_params.save_last
exp_manager.checkpoint_callback_params.filename
exp_manager.checkpoint_callback_params.model_parallel_size
exp_manager.checkpoint_callback_params.use_master_weights_in_ckpt
distributed_strategy.token_shuffle_group_size
data.dev_choose_samples data.num_workers data.pad_samples_to_global_batch_size data.skip_warmup
data.use_sft_style_data_module data.tokenizer.delimiter data.tokenizer.sentencepiece_legacy
data.tokenizer.use_fast
model.apply_query_key_layer_scaling model.attention_dropout model.do_layer_norm_weight_decay
model.ffn_dropout model.fuse_qkv model.hidden_dropout model.kv_channels
model.persist_layer_norm model.qkv_linear
model.transpose_nki_inputs model.use_cpu_initialization model.use_scaled_init_method
model.activations_checkpoint_recompute model.fusions.softmax
model.fusions.flash_attention model.fusions.do_layer_norm_weight_decay
model.optim.capturable model.optim.sched.max_steps_for_lr_sched
precision.fp32_grads_cc precision.parallel_layers_reduce_dtype
""".split())


def known_paths() -> list[str]:
    """Every key path nxcc accepts in some form (for the nearest-name suggestion)."""
    return sorted({*ACTED, *IGNORED, *NEUTRAL, *REFUSED_SUBTREES, *IGNORED_SUBTREES})


def block_paths() -> frozenset[str]:
    """The key paths that hold a mapping (a block such as `trainer` or `model.optim`)."""
    blocks: set[str] = set()
    for path in known_paths():
        parts = path.split(".")
        blocks.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(blocks)
