"""A user's own model (`model.module: FILE.py:FUNCTION`) as the engine's model provider.

The function builds the model from `nxcc.nxd`'s primitives for one rank (`nxd.Model`);
`model.module_args` are its keyword arguments. The engine treats it as it treats the
built-in decoder: each rank builds it (`load`, `trace_rank`), the stages are cut at its cut
points (`nxd.pipeline_cut`: those `model.pipeline_cuts` names, else chosen by the stages'
FLOPs, `plan_module_pipeline`), each stage is differentiated and sliced through
`model_build.stage_build`, and checkpoints join and re-cut its tensors through its
parameter specs (`module_unshard`). Its weights are drawn once from `seed` for the whole
model, in the order it declares them (normal(0, std), ones, zeros as each says).

Anything the user's code raises while the model is built ends in one line naming the file,
the line and the error (`model.module: my_model.py line 12: ...`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import threading
import traceback
from collections.abc import Callable
from types import ModuleType

import numpy as np

from nxcc.driver.train.config import DataConfig, DistributedConfig
from nxcc.driver.train.config_model import ModuleModelConfig
from nxcc.driver.train.cuts import best_split
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.model_build import join_tensor, shared_copies, stage_build
from nxcc.driver.train.pipeline_plan import Pipeline
from nxcc.driver.train.stage import StageBuild, StageBuilder, StagePlan
from nxcc.ir.flops import module_flops
from nxcc.nxd.model import InputSpec, Model, ModelError, RankSpec
from nxcc.nxd.params import ParamSpec, init_full_weights
from nxcc.nxd.pipeline.stage import Traced, build_stage, program, trace

KEY = "model.module"
RECOMPUTE = {None: "none", "selective": "selective", "full": "full"}

_modules: dict[str, ModuleType] = {}
_lock = threading.Lock()


def _fail(cfg: ModuleModelConfig, exc: BaseException) -> TrainConfigError:
    """One line for an error the user's code raised: its file and line when it is there."""
    where = os.path.basename(cfg.path)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if os.path.abspath(f.filename) == cfg.path]
    text = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, SyntaxError) and exc.filename and \
            os.path.abspath(exc.filename) == cfg.path:
        where += f" line {exc.lineno}"
        text = exc.msg
    elif frames:
        where += f" line {frames[-1].lineno}"
    return TrainConfigError(KEY, f"{where}: {type(exc).__name__}: {text}".rstrip(": "))


def load(cfg: ModuleModelConfig) -> Callable[..., object]:
    """The build function `cfg` names (its file imported once per process)."""
    with _lock:
        found = _modules.get(cfg.path)
        if found is None:
            name = "nxcc_user_model_" + hashlib.sha256(cfg.path.encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, cfg.path)
            if spec is None or spec.loader is None:
                raise TrainConfigError(KEY, f"{cfg.path} cannot be imported as Python")
            found = importlib.util.module_from_spec(spec)
            sys.modules[name] = found
            try:
                spec.loader.exec_module(found)
            except Exception as exc:  # noqa: BLE001  (the user's code: any error, one line)
                del sys.modules[name]
                raise _fail(cfg, exc) from None
            _modules[cfg.path] = found
    fn = getattr(found, cfg.function, None)
    if not callable(fn):
        raise TrainConfigError(KEY, f"{os.path.basename(cfg.path)} has no function "
                                    f"{cfg.function!r}")
    return fn


def trace_rank(cfg: ModuleModelConfig, rank: RankSpec, cuts: frozenset[int] = frozenset()
               ) -> Traced:
    """The model as `rank` builds it, split at the stage boundaries `cuts`."""
    fn = load(cfg)
    args = cfg.kwargs

    def build(m: Model) -> tuple:
        return fn(m, **args)  # type: ignore[return-value]  # trace checks what it returns

    try:
        return trace(build, rank, cuts, os.path.splitext(os.path.basename(cfg.path))[0])
    except ModelError as exc:
        raise TrainConfigError(KEY, f"{os.path.basename(cfg.path)}: {exc}") from None
    except TrainConfigError:
        raise
    except Exception as exc:  # noqa: BLE001  (the user's code: any error, one line)
        raise _fail(cfg, exc) from None


def rank_spec(distributed: DistributedConfig, data: DataConfig, tp_rank: int = 0) -> RankSpec:
    return RankSpec(tp_rank, distributed.tensor_model_parallel_size,
                    distributed.sequence_parallel, distributed.kv_replicator,
                    data.micro_batch_size)


def piece_names(traced: Traced) -> list[str]:
    """Each piece's name: the cut point that ends it; the last piece is `loss`."""
    return [mk.name for mk in traced.model.markers] + ["loss"]


def _label(names: list[str]) -> Callable[[range], str]:
    def label(pieces: range) -> str:
        a, b = names[pieces.start], names[pieces.stop - 1]
        return a if a == b else f"{a}..{b}"
    return label


def _stage_flops(traced: Traced, pieces: range, recompute: str) -> int:
    sp = build_stage(traced, pieces, recompute)
    names = ["forward_backward"] if sp.last else ["forward", "backward"]
    return sum(module_flops(program(sp.module, n)) for n in names)


def _named_cuts(cfg: ModuleModelConfig, traced: Traced, stages: int) -> tuple[int, ...]:
    """`model.pipeline_cuts` as the first piece of each stage but the first."""
    key = "model.pipeline_cuts"
    markers = traced.model.markers
    index = {mk.name: i for i, mk in enumerate(markers)}
    if len(cfg.pipeline_cuts) != stages - 1:
        raise TrainConfigError(key, f"{len(cfg.pipeline_cuts)} cut(s) for "
                                    f"pipeline_model_parallel_size {stages}: PP stages need "
                                    f"PP - 1 = {stages - 1}")
    cuts: list[int] = []
    for name in cfg.pipeline_cuts:
        if name not in index:
            known = ", ".join(mk.name for mk in markers if mk.allowed) or "none"
            raise TrainConfigError(key, f"{name!r} is not a cut point of the model (its cut "
                                        f"points: {known})")
        if not markers[index[name]].allowed:
            raise TrainConfigError(key, f"{name!r}: no stage may start there")
        if cuts and index[name] + 1 <= cuts[-1]:
            raise TrainConfigError(key, f"{name!r}: the cuts must follow the model's order")
        cuts.append(index[name] + 1)
    return tuple(cuts)


def _balanced_cuts(cfg: ModuleModelConfig, distributed: DistributedConfig, data: DataConfig,
                   stages: int, recompute: str) -> tuple[int, ...]:
    """The split whose largest stage is least by the pieces' FLOPs: each piece priced as
    a stage of its own (forward and backward), a stage as the sum of its pieces'."""
    count = len(trace_rank(cfg, rank_spec(distributed, data)).model.markers) + 1
    every = trace_rank(cfg, rank_spec(distributed, data), frozenset(range(1, count)))
    price = [_stage_flops(every, range(p, p + 1), recompute) for p in range(count)]
    total = np.cumsum([0, *price])
    markers = every.model.markers
    return best_split(lambda s, m, e: int(total[e] - total[m]), count, stages,
                      lambda m: markers[m - 1].allowed)


def plan_module_pipeline(cfg: ModuleModelConfig, distributed: DistributedConfig,
                         data: DataConfig) -> Pipeline:
    """The stages' pieces of the user model: `model.pipeline_cuts`, else the balanced
    split; each stage's FLOPs per micro-batch (its programs on TP rank 0)."""
    stages = distributed.pipeline_model_parallel_size
    recompute = RECOMPUTE[cfg.activations_checkpoint_granularity]
    whole = trace_rank(cfg, rank_spec(distributed, data))
    names = piece_names(whole)
    count = whole.pieces
    if stages == 1:
        return Pipeline((), False, None, count, _label(names))
    if count < stages:
        raise TrainConfigError("distributed_strategy.pipeline_model_parallel_size",
                               f"{stages} stages need at least {stages - 1} cut points; the "
                               f"model has {count - 1} (nxd.pipeline_cut)")
    cuts = _named_cuts(cfg, whole, stages) if cfg.pipeline_cuts else \
        _balanced_cuts(cfg, distributed, data, stages, recompute)
    split = trace_rank(cfg, rank_spec(distributed, data), frozenset(cuts))
    bounds = [0, *cuts, count]
    flops = tuple(_stage_flops(split, range(a, b), recompute)
                  for a, b in zip(bounds, bounds[1:], strict=False))
    return Pipeline(cuts, not cfg.pipeline_cuts, flops, count, _label(names))


def model_specs(cfg: ModuleModelConfig, tp: int, kv_replicator: int) -> list[ParamSpec]:
    """The whole model's parameters (full shapes) as a layout of `tp` ranks declares them."""
    seen: dict[str, ParamSpec] = {}
    for s in trace_rank(cfg, RankSpec(0, tp, False, kv_replicator, 1)).model.specs:
        seen.setdefault(s.name, s.whole())
    return list(seen.values())


def module_builder(cfg: ModuleModelConfig, seed: int, distributed: DistributedConfig,
                   data: DataConfig) -> tuple[StageBuilder, Pipeline, Traced]:
    """The builder of every rank's stage, the pipeline's split, and the model as TP rank 0
    builds it (its inputs and parameters)."""
    pipeline = plan_module_pipeline(cfg, distributed, data)
    recompute = RECOMPUTE[cfg.activations_checkpoint_granularity]
    whole = trace_rank(cfg, rank_spec(distributed, data), frozenset(pipeline.cuts))
    stages, index = shared_copies(whole, pipeline.cuts, KEY)
    full: dict[str, np.ndarray] = {}
    lock = threading.Lock()

    def build(plan: StagePlan) -> StageBuild:
        with lock:
            if not full:
                full.update(init_full_weights(whole.model.specs, seed))
        rank = RankSpec(plan.tp_rank, plan.tp_size, plan.sequence_parallel,
                        distributed.kv_replicator, plan.micro_batch)
        traced = trace_rank(cfg, rank, frozenset(pipeline.cuts))
        return stage_build(traced, pipeline.pieces(plan.stage), recompute, full, KEY,
                           stages, index)

    return build, pipeline, whole


def module_unshard(cfg: ModuleModelConfig) -> Callable[[str, list[list[np.ndarray]], int],
                                                        np.ndarray]:
    """Join one tensor of a checkpoint (any layout) into the whole tensor."""
    return join_tensor(lambda tp, kv: model_specs(cfg, tp, kv))


#: The inputs of a user model that reads the token sources as the decoder does.
TOKEN_INPUTS = ("tokens", "labels")


def module_vocab(inputs: list[InputSpec], data: DataConfig) -> int:
    """The id bound of a token model's inputs (what its embedding and loss take), after
    checking their shapes against the data's sequences."""
    key = "model.module"
    for spec in inputs:
        if spec.type.shape[1:] != (data.seq_length,):
            raise TrainConfigError(key, f"input {spec.name!r} is {spec.type}; the token data "
                                        f"gives [micro_batch, seq_length] = "
                                        f"[{data.micro_batch_size}, {data.seq_length}]")
        if not spec.type.dtype.is_integer:
            raise TrainConfigError(key, f"input {spec.name!r} is {spec.type}; token ids are "
                                        "integers")
    bounds = [s.bound for s in inputs if s.bound is not None]
    if not bounds:
        raise TrainConfigError(key, "the model's tokens index no embedding and its labels no "
                                    "loss (nxd.ParallelEmbedding, nxd.parallel_cross_entropy)")
    return min(bounds)


def check_module_ranks(cfg: ModuleModelConfig, distributed: DistributedConfig,
                       data: DataConfig, pipeline: Pipeline) -> None:
    """Every stage of every TP rank built as the run will build it (its programs, not
    compiled), so a model that cannot be cut or sharded is refused before the run."""
    recompute = RECOMPUTE[cfg.activations_checkpoint_granularity]
    for tp_rank in range(distributed.tensor_model_parallel_size):
        traced = trace_rank(cfg, rank_spec(distributed, data, tp_rank),
                            frozenset(pipeline.cuts))
        for stage in range(pipeline.stages):
            try:
                build_stage(traced, pipeline.pieces(stage), recompute)
            except ModelError as exc:
                raise TrainConfigError(KEY, f"{os.path.basename(cfg.path)}: {exc}") from None
