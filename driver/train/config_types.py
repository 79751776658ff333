"""The configuration of one training run, as frozen dataclasses: what `config.load_config`
makes of an NxD Training YAML file and what the size checks (`config_checks`) and the
trainer read."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from nxcc.driver.train.config_data import DataConfig
from nxcc.driver.train.config_model import ModelConfig, ModuleModelConfig, OnnxModelConfig
from nxcc.driver.train.layout import RankLayout
from nxcc.driver.train.lr_schedule import SchedConfig
from nxcc.driver.train.precision import Precision
from nxcc.driver.train.tokenizer import Vocabulary
from nxcc.passes.autodiff.optimizers import OptimizerConfig


@dataclass(frozen=True)
class TrainerConfig:
    devices: int
    num_nodes: int
    max_steps: int
    log_every_n_steps: int
    gradient_clip_val: float | None  # None or 0: no clipping (PyTorch Lightning's rule)
    lnc: int | None = None  # physical cores per logical core, when the file says

    @property
    def world_size(self) -> int:
        return self.devices * self.num_nodes


@dataclass(frozen=True)
class ExpManagerConfig:
    """`resume_from_checkpoint`: a Hugging Face model folder whose weights start the run
    (None: the seed's); `tensorboard`: write TensorBoard event files."""

    exp_dir: str
    resume_if_exists: bool
    create_checkpoint_callback: bool
    every_n_train_steps: int | None
    tensorboard: bool = False
    resume_from_checkpoint: str | None = None

    @property
    def checkpoint_dir(self) -> str:
        return os.path.join(self.exp_dir, "checkpoints")


@dataclass(frozen=True)
class DistributedConfig:
    tensor_model_parallel_size: int
    pipeline_model_parallel_size: int
    data_parallel_size: int
    zero1: bool
    sequence_parallel: bool
    kv_replicator: int

    @property
    def layout(self) -> RankLayout:
        return RankLayout(self.tensor_model_parallel_size, self.pipeline_model_parallel_size,
                          self.data_parallel_size)


@dataclass(frozen=True)
class OptimConfig:
    name: str  # adamw or sgd
    lr: float
    weight_decay: float
    betas: tuple[float, float]
    eps: float
    momentum: float
    nesterov: bool
    sched: SchedConfig

    def optimizer_config(self) -> OptimizerConfig:
        """The optimizer as `passes.autodiff.optimizers` builds it."""
        return OptimizerConfig(self.name, weight_decay=self.weight_decay, betas=self.betas,
                               eps=self.eps, momentum=self.momentum, nesterov=self.nesterov)


@dataclass(frozen=True)
class TrainConfig:
    """A whole run. Exactly one of `model` (a built-in decoder), `onnx` and `module` (a
    model of nxcc.nxd's primitives) is set.
    `ignored_keys`: NxD keys present in the file that nxcc does not act on."""

    name: str
    seed: int
    trainer: TrainerConfig
    exp_manager: ExpManagerConfig
    distributed: DistributedConfig
    data: DataConfig
    model: ModelConfig | None
    onnx: OnnxModelConfig | None
    optim: OptimConfig
    precision: str
    compiler_flags: tuple[str, ...]
    compiler_cache_url: str | None
    source: str
    ignored_keys: tuple[str, ...] = ()
    recipe: Precision = field(default_factory=Precision)
    vocabulary: Vocabulary | None = None  # the tokenizer's, when data.tokenizer names one
    module: ModuleModelConfig | None = None  # a user's model (model.module)
