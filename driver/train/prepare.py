"""`prepare_job(config)`: every check a run makes before its first step, in one place.

`neuronx-cc train --dry-run` and the real run both call it, so they refuse the same files
with the same line: the model's size against this host's memory, every rank's part of the
model (each tensor-parallel rank of each pipeline stage, as the decoder will build it), an
ONNX model's import, the tokenizer's vocabulary against the model's, the data (each
source's files, every token id of every batch the run will read, the validation data a
validation needs), the checkpoint a resume would load (`resume`: a lost `latest` beside
committed step folders refused; its manifest, its precision, its files those of the layout
that wrote it), that the run saves over no committed checkpoint and that its metrics file is
a regular file, and a Hugging Face checkpoint the run starts from (every tensor against the
model; not read when a checkpoint of the run itself is resumed), and the simulated instance
the job runs on (`instance`: its type, target and LNC, the ranks per node against its cores
and its collectives' rank sets).

`exp_manager.resume_from_checkpoint` names one of two kinds of folder, told apart by what it
holds: an nxcc step folder (`checkpoint.json`, `exp_dir/checkpoints/step_N`) resumes from that
step, before `latest`; a Hugging Face model folder (`config.json` and safetensors) starts the
run from its weights at step 0, after a checkpoint of the run itself (`resume_if_exists`).

Nothing is written under `exp_dir`; the Megatron index mappings are cached (beside the data
or in `index_mapping_dir`) only when `write_cache` is set, which the dry run does not set.
Every array of a resumed checkpoint is checked against the model by each rank once it has
built its part, before the first step (`run`).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np

from nxcc.backend.runtime.config import RuntimeConfig
from nxcc.backend.runtime.job_cores import JobCores
from nxcc.driver.options import CompileOptions
from nxcc.driver.train import checkpoint_io as ckpt
from nxcc.driver.train import reshard
from nxcc.driver.train.arrays import ArrayBatches
from nxcc.driver.train.batches import MegatronRows, SampleBatches
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.data import Batches, load_tokens
from nxcc.driver.train.engine import EngineSettings
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.hf_checkpoint import KEY as START_KEY
from nxcc.driver.train.hf_checkpoint import is_hf_folder, load_hf_weights
from nxcc.driver.train.hf_dataset import HFRows, is_hf_dataset
from nxcc.driver.train.instance import TrainingInstance, check_placement, training_instance
from nxcc.driver.train.megatron_data import Request, megatron_samples
from nxcc.driver.train.metrics import check_metrics_file
from nxcc.driver.train.model_stage import (
    Pipeline,
    decoder_builder,
    decoder_config,
    decoder_unshard,
    recompute_mode,
)
from nxcc.driver.train.module_model import (
    TOKEN_INPUTS,
    check_module_ranks,
    module_builder,
    module_unshard,
    module_vocab,
)
from nxcc.driver.train.onnx_stage import onnx_builder
from nxcc.driver.train.resume import check_saves, is_step_folder, resume_point, saved_steps
from nxcc.driver.train.stage import StageBuilder
from nxcc.driver.train.tensorboard_log import MISSING as TENSORBOARD_MISSING
from nxcc.driver.train.tensorboard_log import available as tensorboard_available
from nxcc.nxd.model import InputSpec
from nxcc.nxd.models.decoder import DecoderError, check_plan, parameter_count
from nxcc.nxd.models.decoder import StagePlan as DecoderPlan
from nxcc.nxd.params import ParamSpec


def engine_settings(config: TrainConfig, where: TrainingInstance | None = None
                    ) -> EngineSettings:
    """The engine's settings; the stages compiled for `where`'s target and LNC (default:
    trn1, LNC 1)."""
    opt, sched = config.optim, config.optim.sched
    clip = config.trainer.gradient_clip_val or None
    options = CompileOptions(target=where.target, lnc=where.lnc) if where is not None else \
        CompileOptions(target="trn1")
    return EngineSettings(
        config.distributed.layout, config.data.micro_batch_size,
        config.data.global_batch_size, config.data.seq_length, opt.optimizer_config(),
        lambda k: sched.lr_at(opt.lr, k), zero1=config.distributed.zero1,
        sequence_parallel=config.distributed.sequence_parallel, clip=clip,
        options=options, precision=config.recipe, seed=config.seed)


@dataclass
class Job:
    """What every rank of this process shares."""

    config: TrainConfig
    settings: EngineSettings
    batches: Batches | SampleBatches | ArrayBatches
    build: StageBuilder
    emit: Callable[[str], None]
    resume: ckpt.Checkpoint | None
    pipeline: Pipeline
    where: TrainingInstance
    vocab: int = 0
    validation: Batches | SampleBatches | ArrayBatches | None = None
    validation_batches: int = 0
    tensorboard: bool = False
    warnings: list[str] = field(default_factory=list)
    losses: list[float] = field(default_factory=list)
    val_losses: list[tuple[int, float]] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)
    memory: list[dict[str, int]] = field(default_factory=list)
    speeds: list[float] = field(default_factory=list)
    logged: bool = False
    unshard: reshard.Unshard | None = None
    inputs: list[InputSpec] = field(default_factory=list)  # a user model's data inputs
    cores: JobCores | None = None  # where the ranks run, once reserved (`run`)
    core_programs: dict[str, int] = field(default_factory=dict)  # rank 0's, per program
    _whole: list = field(default_factory=list)
    _whole_lock: threading.Lock = field(default_factory=threading.Lock)

    def whole_state(self, keys: list[str]) -> tuple[dict, dict]:
        """The resumed checkpoint made whole (read once per process, `reshard`); `keys`
        are the optimizer state's."""
        with self._whole_lock:
            if not self._whole:
                assert self.resume is not None and self.unshard is not None
                self._whole.append(reshard.whole_state(self.resume, self.unshard,
                                                       self.settings.bucket_bytes, keys))
            return self._whole[0]

    @property
    def start(self) -> int:
        return self.resume.step if self.resume is not None else 0

    def saves(self) -> list[int]:
        """The steps this run saves a checkpoint of."""
        return planned_saves(self.config, self.resume)

    def layout_record(self) -> dict[str, object]:
        """What a checkpoint's shards depend on: the layout and the precision's dtypes."""
        lay, p = self.settings.layout, self.settings.precision
        return {"tp": lay.tp, "pp": lay.pp, "dp": lay.dp, "zero1": int(self.settings.zero1),
                "kv_replicator": self.config.distributed.kv_replicator, "precision": p.label}


def physical_memory() -> int:
    """This host's memory in bytes (0 when the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def check_model_size(config: TrainConfig, specs: list[ParamSpec] | None = None) -> None:
    """The whole model's weights are drawn in this process: refuse a model whose float32
    weights alone exceed the host's memory (or numpy's sizes), naming it (the built-in
    decoder's parameters, or `specs`)."""
    m = config.model
    huge, vocab, least = False, "", ""
    if specs is None:
        assert m is not None
        vocab = f", vocab_size {m.vocab_size:,}"
        huge = max(m.vocab_size, m.hidden_size) > 1 << 40
        # beyond numpy's sizes the embedding alone says enough (the model is not built);
        # the decoder's layers are counted, never listed (num_layers may be any size)
        count = m.vocab_size * m.hidden_size if huge else parameter_count(decoder_config(m))
        least = "at least " if huge else ""
    else:
        count = sum(math.prod(s.shape) for s in specs)
    limit = physical_memory()
    if count * 4 > (limit or 1 << 62) or huge:
        raise TrainConfigError("model", f"{least}{count:,} parameters "
                               f"({count * 4 / 2**30:,.1f} GiB "
                               f"in float32{vocab}) do not fit this "
                               f"host's {limit / 2**30:,.1f} GiB: nxcc draws the whole "
                               "model's weights in memory")


def check_rank_plans(config: TrainConfig, pipeline: Pipeline) -> None:
    """Every rank's part of the decoder as the run will build it (`check_plan`)."""
    m, d, data = config.model, config.distributed, config.data
    assert m is not None
    cfg = decoder_config(m)
    for stage in range(d.pipeline_model_parallel_size):
        pieces = pipeline.pieces(stage, m.num_layers)
        for tp_rank in range(d.tensor_model_parallel_size):
            plan = DecoderPlan(
                tp_rank=tp_rank, tp_size=d.tensor_model_parallel_size,
                sequence_parallel=d.sequence_parallel, kv_replicator=d.kv_replicator,
                first_piece=pieces.start, last_piece=pieces.stop, has_embedding=stage == 0,
                has_head=stage == d.pipeline_model_parallel_size - 1,
                recompute=recompute_mode(m), micro_batch=data.micro_batch_size,
                seq_length=data.seq_length)
            try:
                check_plan(cfg, plan)
            except DecoderError as exc:
                raise TrainConfigError("model", str(exc)) from None


def _megatron_counts(config: TrainConfig) -> tuple[int, int]:
    """Samples NxD asks of the train and validation splits."""
    g, steps, val = config.data.global_batch_size, config.trainer.max_steps, \
        config.data.validation
    if not val.enabled:
        return steps * g, 0
    assert val.interval is not None
    if isinstance(val.limit, float):
        return steps * g, 1
    return steps * g, (steps // val.interval + 1) * val.limit * g


def _folder_batches(folder: str, key: str, config: TrainConfig, vocab: int | None,
                    eod: int | None) -> Batches | SampleBatches:
    data = config.data
    if os.path.isdir(folder) and is_hf_dataset(folder):
        rows = HFRows(folder, data.seq_length, key)
        return SampleBatches(rows, data.global_batch_size, key,
                             f"the Hugging Face dataset {folder}")
    return Batches(load_tokens(folder, vocab, key), data.seq_length,
                   data.global_batch_size, eod, key)


def validation_batches(config: TrainConfig, val: Batches | SampleBatches | ArrayBatches
                       ) -> int:
    """How many global batches a validation reads (`trainer.limit_val_batches`)."""
    limit = config.data.validation.limit
    count = limit if isinstance(limit, int) else int(val.batches_per_epoch * limit)
    if count < 1 or count > val.batches_per_epoch:
        raise TrainConfigError("trainer.limit_val_batches",
                               f"{limit} asks for {count} validation batches; the "
                               f"validation data holds {val.batches_per_epoch}")
    return count


Source: TypeAlias = Batches | SampleBatches


def data_sources(config: TrainConfig, vocab: int | None, write_cache: bool
                 ) -> tuple[Source, Source | None, int]:
    """(training batches, validation batches or None, the global batches a validation
    reads), every token id checked."""
    data = config.data
    eod = None
    if data.eod_mask_loss:
        eod = config.vocabulary.eod_id if config.vocabulary is not None else None
        if eod is None:
            raise TrainConfigError("data.eod_mask_loss", "needs the end-of-document token "
                                   "id: name a tokenizer that has one (data.tokenizer)")
    val: Batches | SampleBatches | None = None
    if data.megatron is not None:
        req = Request(_megatron_counts(config), data.seq_length, config.seed, write_cache)
        train_set, val_set = megatron_samples(data.megatron, req)
        name = "data.data_prefix"
        train: Batches | SampleBatches = SampleBatches(
            MegatronRows(train_set, data.megatron.extra, eod), data.global_batch_size, name,
            f"the training split of {data.source}")
        if val_set is not None:
            val = SampleBatches(MegatronRows(val_set, data.megatron.extra, eod),
                                data.global_batch_size, name,
                                f"the validation split of {data.source}")
    else:
        assert data.train_dir is not None
        train = _folder_batches(data.train_dir, "data.train_dir", config, vocab, eod)
    if data.val_dir is not None and val is None:
        val = _folder_batches(data.val_dir, "data.val_dir", config, vocab, eod)
    count = 0
    if data.validation.runs(config.trainer.max_steps):
        if val is None:
            raise TrainConfigError("data.val_dir", f"validation every "
                                   f"{data.validation.interval} steps needs validation "
                                   "data: data.val_dir, or a data_prefix with a validation "
                                   "split (or set trainer.limit_val_batches to 0)")
        count = validation_batches(config, val)
    else:
        val = None
    if vocab is not None:
        train.check_ids(config.trainer.max_steps, vocab)
        if val is not None:
            val.check_ids(count, vocab)
    return train, val, count


def _check_vocabularies(config: TrainConfig, vocab: int) -> None:
    v = config.vocabulary
    if v is not None and v.size > vocab:
        key = "model.onnx_path" if config.onnx is not None else "model.vocab_size"
        raise TrainConfigError(key, f"{vocab} rows cannot embed the tokenizer's {v.size} "
                                    f"ids ({v.source})")


def planned_saves(config: TrainConfig, found: ckpt.Checkpoint | None) -> list[int]:
    """The steps a run resuming `found` (None: from step 0) saves a checkpoint of."""
    exp = config.exp_manager
    every = exp.every_n_train_steps if exp.create_checkpoint_callback else None
    return saved_steps(found.step if found is not None else 0, config.trainer.max_steps, every)


def start_folders(config: TrainConfig) -> tuple[str | None, str | None]:
    """(the nxcc step folder, the Hugging Face model folder) `exp_manager.
    resume_from_checkpoint` names, told apart by what the folder holds (see the module
    docstring); (None, None) when the key is not set."""
    start = config.exp_manager.resume_from_checkpoint
    if start is None:
        return None, None
    if is_step_folder(start):
        return start, None
    if is_hf_folder(start):
        return None, start
    what = "does not exist" if not os.path.lexists(start) else \
        "is not a folder" if not os.path.isdir(start) else "holds neither"
    raise TrainConfigError(START_KEY, f"{start} {what}: name an nxcc checkpoint step folder "
                           "(checkpoint.json, to resume from that step) or a Hugging Face "
                           "model folder (config.json and model.safetensors or "
                           "model.safetensors.index.json, to start from its weights)")


def _resume(config: TrainConfig, settings: EngineSettings, step_folder: str | None
            ) -> ckpt.Checkpoint | None:
    """The checkpoint the run continues from (`resume.resume_point`), its precision this
    run's and its files those of the layout that wrote it; None for a run from step 0."""
    exp = config.exp_manager
    found = resume_point(exp.exp_dir, exp.resume_if_exists, step_folder)
    if found is None:
        return None
    written = found.layout.get("precision", "fp32")
    if written != settings.precision.label:
        raise TrainConfigError(found.path, f"was written with precision.type {written}, "
                               f"this run is {settings.precision.label}: resume with the "
                               "precision it was written with")
    reshard.written_layout(found)
    return found


def prepare_job(config: TrainConfig, emit: Callable[[str], None] = print,
                write_cache: bool = True) -> Job:
    """The run's job with every check made (see the module docstring); nothing written
    under `exp_dir`."""
    where = training_instance(config, RuntimeConfig.from_env())
    check_placement(config, where)
    settings = engine_settings(config, where)
    step_folder, hf_folder = start_folders(config)
    found = _resume(config, settings, step_folder)
    check_saves(config.exp_manager.exp_dir, planned_saves(config, found))
    check_metrics_file(config.exp_manager.exp_dir)
    if config.model is not None:
        check_model_size(config)
    initial = load_hf_weights(config, hf_folder) if hf_folder is not None and found is None \
        else None
    if config.module is not None:
        return _module_job(config, settings, where, emit, found, write_cache)
    if config.model is not None:
        build, pipeline = decoder_builder(config.model, config.seed, config.distributed,
                                          config.data, initial)
        check_rank_plans(config, pipeline)
        vocab = config.model.vocab_size
        join: reshard.Unshard = decoder_unshard(config.model)
    else:
        assert config.onnx is not None
        build, pipeline, vocab = onnx_builder(config.onnx, config.data, config.distributed)
        join = _only_slice
    _check_vocabularies(config, vocab)
    batches, validation, count = data_sources(config, vocab, write_cache)
    job = Job(config, settings, batches, build, emit, found, pipeline, where, vocab,
              validation, count, unshard=join)
    return _with_tensorboard(config, job)


def _with_tensorboard(config: TrainConfig, job: Job) -> Job:
    if config.exp_manager.tensorboard:
        job.tensorboard = tensorboard_available()
        if not job.tensorboard:
            job.warnings.append(TENSORBOARD_MISSING)
    return job


def _module_job(config: TrainConfig, settings: EngineSettings, where: TrainingInstance,
                emit: Callable[[str], None], found: ckpt.Checkpoint | None,
                write_cache: bool) -> Job:
    """The job of a user model (`model.module`): its every stage on every TP rank built
    once (as the run will), its data (token sources for a model whose inputs are `tokens`
    and `labels`, else one array per input, `arrays.py`) checked against its inputs."""
    cfg = config.module
    assert cfg is not None
    if config.exp_manager.resume_from_checkpoint is not None:
        raise TrainConfigError("exp_manager.resume_from_checkpoint", "Hugging Face weights "
                               "start the built-in decoder, not a model.module")
    build, pipeline, whole = module_builder(cfg, config.seed, config.distributed, config.data)
    check_model_size(config, whole.model.specs)
    check_module_ranks(cfg, config.distributed, config.data, pipeline)
    inputs = whole.model.inputs
    batches: Batches | SampleBatches | ArrayBatches
    validation: Batches | SampleBatches | ArrayBatches | None
    if [i.name for i in inputs] == list(TOKEN_INPUTS):
        vocab = module_vocab(inputs, config.data)
        _check_vocabularies(config, vocab)
        batches, validation, count = data_sources(config, vocab, write_cache)
    else:
        batches, validation, count = array_sources(config, inputs)
    job = Job(config, settings, batches, build, emit, found, pipeline, where, 0, validation,
              count, unshard=module_unshard(cfg), inputs=list(inputs))
    return _with_tensorboard(config, job)


def array_sources(config: TrainConfig, inputs: list[InputSpec]
                  ) -> tuple[ArrayBatches, ArrayBatches | None, int]:
    """The arrays of `data.train_dir` (and `data.val_dir`) for a model's named inputs."""
    data = config.data
    if data.megatron is not None or data.train_dir is None:
        raise TrainConfigError("data.train_dir", "a model whose inputs are not tokens and "
                               "labels reads one .npy per input from data.train_dir")
    train = ArrayBatches(data.train_dir, inputs, data.global_batch_size)
    if not data.validation.runs(config.trainer.max_steps):
        return train, None, 0
    if data.val_dir is None:
        raise TrainConfigError("data.val_dir", f"validation every {data.validation.interval} "
                               "steps needs validation data (or set "
                               "trainer.limit_val_batches to 0)")
    val = ArrayBatches(data.val_dir, inputs, data.global_batch_size, "data.val_dir")
    return train, val, validation_batches(config, val)


def _only_slice(name: str, parts: list[list[np.ndarray]], kv_replicator: int) -> np.ndarray:
    """An ONNX model's tensors are never split over TP ranks or pipeline stages: the one
    slice is whole."""
    return parts[0][0]
