"""Each pipeline stage of a layout as `train` would build it, measured without weights.

`stage_figures(config, pipeline, stage)` builds the stage's programs with the same builders
the training engine uses (`model_stage.decoder_plan`, `nxd.models.decoder.build_stage`), at
the model's real size, as IR with shapes and no weights, and measures them:

- each program's work (`backend.program.estimate.program_work`: TensorEngine FLOPs by
  dtype, vector FLOPs, HBM bytes, collectives) and its peak intermediate bytes (the memory
  plan the NEFF lowering uses, `peak_activation_bytes`);
- the stash 1F1B keeps per micro-batch in flight, the activation handed to the next stage;
- the rank's flat parameter vector (`train.flat.FlatLayout`: its elements, and the shard the
  optimizer updates under ZeRO-1, padding included) and the optimizer update program;
- with tied embeddings across pipeline stages, the elements of the embedding the first
  stage holds and the last stage holds a copy of (their gradients are summed over the
  pair, as Megatron's embedding group does and the engine does).

TP rank 0 stands for its stage: the TP ranks' programs have the same shapes; stages that
differ only in which layers they hold are built once.

On the device a recipe with bf16 products keeps its activations in bf16 (NxD casts the
model to bf16; XLA_DOWNCAST_BF16), where nxcc's own programs keep f32 activations and
convert at each product. The bytes of such a stage (activations, stash, collectives, HBM
traffic) are counted on its programs with their f32 values retyped to bf16
(`to_device_precision`), which also puts every product at the TensorEngine's bf16 rate,
as the engine's precision rewrite (`engine.apply_precision`: bf16 operands) does; with
`fp32` the programs are measured as they are, so the plan's figures equal a run's
`metrics.jsonl` ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import lru_cache

from nxcc.backend.program.estimate import Work, program_work
from nxcc.backend.program.memory_plan import peak_activation_bytes
from nxcc.driver.train.config import TrainConfig
from nxcc.driver.train.config_model import ModelConfig
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.flat import FlatLayout
from nxcc.driver.train.memory import stash_bytes, tensor_bytes
from nxcc.driver.train.model_stage import Pipeline, decoder_config, decoder_plan
from nxcc.driver.train.optimizer_step import build_update_module
from nxcc.driver.train.precision import Precision
from nxcc.driver.train.stage import StagePlan
from nxcc.ir.core import Module
from nxcc.ir.dtypes import DType
from nxcc.nxd.models.decoder import DecoderError, build_stage, model_specs, stage_specs
from nxcc.nxd.models.decoder import StagePlan as DecoderPlan
from nxcc.nxd.models.decoder.config import PIECES_PER_LAYER
from nxcc.nxd.models.decoder.weights import TIED
from nxcc.passes.autodiff.optimizers import OptimizerConfig
from nxcc.passes.dead_code_elimination import DeadCodeElimination

#: The engine's DP bucket size (`EngineSettings.bucket_bytes`).
BUCKET_BYTES = 1 << 20
WIDE = (DType.F32, DType.F64)


@dataclass(frozen=True)
class ProgramFigures:
    """One stage program: its work per execution and its peak intermediate bytes."""

    name: str
    work: Work
    peak_bytes: int


@dataclass(frozen=True)
class StageFigures:
    """One stage of the layout, on one rank (see the module docstring)."""

    pieces: range
    first: bool
    last: bool
    programs: dict[str, ProgramFigures]
    param_elements: int
    flat_elements: int  # the flat vector, padding included
    shard_elements: int
    stash_bytes: int
    handoff_bytes: int
    update: Work
    shared_elements: int = 0  # a tied embedding (or its copy) summed with another stage's

    @property
    def peak_bytes(self) -> int:
        return max(p.peak_bytes for p in self.programs.values())

    @property
    def largest_collective(self) -> int:
        """One rank's operand bytes of the largest collective its programs run."""
        return max((c.bytes for p in self.programs.values() for c in p.work.collectives),
                   default=0)


def to_device_precision(module: Module) -> None:
    """Retype `module`'s f32 and f64 values to bf16, in place: the bytes a bf16 recipe's
    programs take on the device (for measuring only: never run or verified; see the
    module docstring)."""
    for fn in module.functions.values():
        for v in [*fn.params, *(r for op in fn.body for r in op.results)]:
            if v.type.dtype in WIDE:
                v.type = v.type.with_dtype(DType.BF16)


def low_precision(precision: Precision) -> bool:
    """Whether the device keeps the recipe's activations in bf16."""
    return precision.bf16_products


def stage_figures(config: TrainConfig, pipeline: Pipeline, stage: int) -> StageFigures:
    """The figures of stage `stage` of `config`'s layout (TrainConfigError when the decoder
    refuses the layout)."""
    dplan = rank_plan(config, pipeline, stage)
    assert config.model is not None
    return figures_from(config, dplan,
                        measure_stage(config.model, config.recipe, at_first_layer(dplan)))


def rank_plan(config: TrainConfig, pipeline: Pipeline, stage: int) -> DecoderPlan:
    """The decoder plan of TP rank 0 of stage `stage`."""
    d, data, model = config.distributed, config.data, config.model
    assert model is not None
    plan = StagePlan(0, d.tensor_model_parallel_size, stage, d.pipeline_model_parallel_size,
                     data.micro_batch_size, data.seq_length, d.sequence_parallel)
    return decoder_plan(d, pipeline, model, plan)


def figures_from(config: TrainConfig, dplan: DecoderPlan, built: MeasuredStage
                 ) -> StageFigures:
    """A stage's figures from its measured programs and the layout's DP and ZeRO-1."""
    d = config.distributed
    flat = FlatLayout(built.shapes, d.data_parallel_size, BUCKET_BYTES)
    shard = flat.shard_size(d.zero1 and d.data_parallel_size > 1)
    return StageFigures(dplan.pieces, dplan.has_embedding, dplan.has_head, built.programs,
                        flat.used, flat.size, shard, built.stash_bytes, built.handoff_bytes,
                        update_work(config.optim.optimizer_config(), shard),
                        shared_elements(config, dplan))


def shared_elements(config: TrainConfig, dplan: DecoderPlan) -> int:
    """Elements of the parameter this stage's rank shares with another stage: with tied
    embeddings and pipeline stages, the first stage's embedding slice and the last stage's
    copy of it (the head reads it); 0 elsewhere."""
    model = config.model
    assert model is not None
    if not model.share_embeddings_and_output_weights or dplan.has_embedding == dplan.has_head:
        return 0
    spec = next(s for s in model_specs(decoder_config(model)) if s.name == TIED)
    return math.prod(spec.local_shape(dplan.tp_size))


def _program(module: Module, name: str) -> Module:
    """Function `name` of `module` (and what it calls) as a program, dead code removed in
    place (`nxd.models.decoder.program` without the copy)."""
    out = Module(name, dict(module.functions), name)
    DeadCodeElimination().run(out)  # drops the other functions from `out` only
    return out


def at_first_layer(dplan: DecoderPlan) -> DecoderPlan:
    """`dplan` moved to the model's first layers (its pieces shifted by whole layers): the
    same programs but for the layer numbers in names, so stages alike are built once."""
    shift = dplan.pieces.start - dplan.pieces.start % PIECES_PER_LAYER
    return replace(dplan, first_piece=dplan.pieces.start - shift,
                   last_piece=dplan.pieces.stop - shift, first_layer=0, last_layer=0)


@dataclass(frozen=True)
class MeasuredStage:
    """A stage's measured programs, its parameters' shapes (TP rank 0), its stash and
    handoff bytes per micro-batch."""

    programs: dict[str, ProgramFigures]
    shapes: tuple[tuple[int, ...], ...]
    stash_bytes: int
    handoff_bytes: int


@lru_cache(maxsize=4096)
def measure_stage(model: ModelConfig, recipe: Precision, dplan: DecoderPlan) -> MeasuredStage:
    """The stage's programs as the engine builds them, measured (see the module
    docstring): the peaks on the programs as built (the engine's figure), the work after
    dead code is gone (the engine compiles them with `dce`)."""
    cfg = decoder_config(model)
    try:
        module = build_stage(cfg, dplan)
    except DecoderError as exc:
        raise TrainConfigError("model", str(exc)) from None
    names = ["forward_backward"] if dplan.has_head else ["forward", "backward"]
    specs = stage_specs(cfg, dplan)
    if low_precision(recipe):
        to_device_precision(module)
    peaks = {n: peak_activation_bytes(module, n) for n in names}
    programs = {n: ProgramFigures(n, program_work(_program(module, n)), peaks[n])
                for n in names}
    forward = module.functions.get("forward")
    return MeasuredStage(programs, tuple(s.local_shape(dplan.tp_size) for s in specs),
                         0 if forward is None else stash_bytes(forward, len(specs)),
                         0 if forward is None else tensor_bytes(forward.results[0].type))


@lru_cache(maxsize=4096)
def update_work(optimizer: OptimizerConfig, n: int) -> Work:
    """The optimizer update program's work over a shard of `n` elements."""
    return program_work(build_update_module(optimizer, n))
