"""Every pass by name, the pipelines as texts, and the one function that builds passes.

A pass is a frozen dataclass whose fields are its options (`passes/base.py`); `PASSES` maps
its registered name to its class. `build_pipeline(text)` builds the passes a pipeline text
names (``fold,cse,shard-partition{num_cores=2}``, see `pipeline_text`); every pipeline the
compiler runs is such a text:

- `PIPELINES`: the -O1..-O3 pipelines;
- `precision_pipeline`: `auto-cast` and `saturate-infinity`, run before them when asked;
- `sharding_pipeline(N)`: with `-lnc N` (N > 1), split fused projections that are only
  sliced apart, choose shardings with the cost model, propagate them, partition into the
  SPMD program; last in each, `latency-hiding` splits collectives into start/done pairs
  scheduled apart;
- `CORE_PIPELINE`: run on each core's program (`fold-transpose`: matrix products read
  transposed operands directly; `fuse`: elementwise fusion; `fuse-epilogue`: a convolution
  and the elementwise op that alone reads it as one op), so autodiff, the -O pipeline and
  sharding all work on unfused IR.
"""

from __future__ import annotations

from nxcc.passes.auto_cast import AutoCast
from nxcc.passes.autodiff.differentiate import Differentiate
from nxcc.passes.base import Pass
from nxcc.passes.common_subexpression_elimination import CommonSubexpressionElimination
from nxcc.passes.constant_folding import ConstantFolding
from nxcc.passes.dead_code_elimination import DeadCodeElimination
from nxcc.passes.fold_transpose import FoldTranspose
from nxcc.passes.fusion.elementwise import FuseElementwise
from nxcc.passes.fusion.epilogue import FuseEpilogues
from nxcc.passes.latency_hiding import LatencyHiding
from nxcc.passes.mesh_partition.partition import MeshPartition
from nxcc.passes.pipeline_text import PipelineError, build_pass, parse_pipeline, pass_text
from nxcc.passes.saturate_infinity import SaturateInfinity
from nxcc.passes.sharding.shard_choose import ShardChoose
from nxcc.passes.sharding.shard_partition import ShardPartition
from nxcc.passes.sharding.shard_propagate import ShardPropagate
from nxcc.passes.sharding.split_fused import SplitFused

PASSES: dict[str, type[Pass]] = {
    cls.name: cls
    for cls in (ConstantFolding, DeadCodeElimination, CommonSubexpressionElimination,
                ShardChoose, ShardPropagate, ShardPartition, AutoCast, SaturateInfinity,
                LatencyHiding, Differentiate, MeshPartition, FoldTranspose, FuseElementwise,
                FuseEpilogues, SplitFused)
}

PIPELINES: dict[int, str] = {
    1: "fold,dce,latency-hiding",
    2: "fold,cse,dce,latency-hiding",
    3: "fold,cse,dce,fold,cse,dce,latency-hiding",
}

#: shard-split-fused undoes fused projections (attention's QKV) so each block can be split
#: by heads; fold evaluates the slices of their weights.
SHARDING_PIPELINE = ("shard-split-fused,fold,dce,shard-choose{{num_cores={n}}},"
                     "shard-propagate{{num_cores={n}}},shard-partition{{num_cores={n}}},"
                     "cse,latency-hiding")

CORE_PIPELINE = "fold-transpose,fuse,fuse-epilogue"


def pass_class(name: str) -> type[Pass]:
    """The class of the pass registered as `name`; PipelineError naming the passes."""
    cls = PASSES.get(name)
    if cls is None:
        raise PipelineError(f"no pass named '{name}' (passes: {', '.join(sorted(PASSES))})")
    return cls


def build_pipeline(text: str) -> list[Pass]:
    """Fresh instances of the passes `text` names, with their options; PipelineError for an
    unknown pass, option or value."""
    return [build_pass(pass_class(spec.name), spec)  # type: ignore[misc]
            for spec in parse_pipeline(text)]


def pipeline_text(passes: list[Pass]) -> str:
    """The text that builds `passes` again (`build_pipeline`'s inverse)."""
    return ",".join(pass_text(p) for p in passes)


def core_pipeline() -> list[Pass]:
    """Fresh instances of the passes run on each core's program, last."""
    return build_pipeline(CORE_PIPELINE)


def pipeline(optlevel: int) -> list[Pass]:
    """Fresh instances of the passes run at `optlevel`."""
    if optlevel not in PIPELINES:
        raise ValueError(f"optimisation level {optlevel} is not one of 1, 2, 3")
    return build_pipeline(PIPELINES[optlevel])


def precision_pipeline(auto_cast: str, cast_type: str, accumulate_fp32: bool,
                       saturate_infinity: bool) -> str:
    """The pipeline run before the -O pipeline for `--auto-cast` and
    `--enable-saturate-infinity` (empty when both are off)."""
    names = []
    if auto_cast != "none":
        names.append(f"auto-cast{{mode={auto_cast} cast_type={cast_type} "
                     f"accumulate_fp32={'true' if accumulate_fp32 else 'false'}}}")
    if saturate_infinity:
        names.append("saturate-infinity")
    return ",".join(names)


def precision_passes(auto_cast: str, cast_type: str, accumulate_fp32: bool,
                     saturate_infinity: bool) -> list[Pass]:
    """Fresh instances of `precision_pipeline`'s passes."""
    return build_pipeline(precision_pipeline(auto_cast, cast_type, accumulate_fp32,
                                             saturate_infinity))


def sharding_pipeline(num_cores: int) -> list[Pass]:
    """Fresh instances of the sharding passes for `num_cores` physical cores."""
    return build_pipeline(SHARDING_PIPELINE.format(n=num_cores))
