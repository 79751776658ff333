"""Every pass by name, and the pipeline run at each optimisation level (-O1..-O3).

With `-lnc N` (N > 1) the driver then runs `SHARDING_PIPELINE` (`sharding_pipeline(N)`):
split fused projections that are only sliced apart, choose shardings with the cost
model, propagate them, partition into the SPMD program.
Last in each, `latency-hiding` splits collectives into start/done pairs scheduled apart.
Then `CORE_PIPELINE` runs on each core's program (`fold-transpose`: matrix products read
transposed operands directly; `fuse`: elementwise fusion), so autodiff, the -O pipeline and
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
from nxcc.passes.latency_hiding import LatencyHiding
from nxcc.passes.mesh_partition.partition import MeshPartition
from nxcc.passes.saturate_infinity import SaturateInfinity
from nxcc.passes.sharding.shard_choose import ShardChoose
from nxcc.passes.sharding.shard_partition import ShardPartition
from nxcc.passes.sharding.shard_propagate import ShardPropagate
from nxcc.passes.sharding.split_fused import SplitFused

PASSES: dict[str, type] = {
    cls.name: cls
    for cls in (ConstantFolding, DeadCodeElimination, CommonSubexpressionElimination,
                ShardChoose, ShardPropagate, ShardPartition, AutoCast, SaturateInfinity,
                LatencyHiding, Differentiate, MeshPartition, FoldTranspose, FuseElementwise,
                SplitFused)
}

PIPELINES: dict[int, list[str]] = {
    1: ["fold", "dce", "latency-hiding"],
    2: ["fold", "cse", "dce", "latency-hiding"],
    3: ["fold", "cse", "dce", "fold", "cse", "dce", "latency-hiding"],
}

#: shard-split-fused undoes fused projections (attention's QKV) so each block can be split
#: by heads; fold evaluates the slices of their weights.
SHARDING_PIPELINE: list[str] = ["shard-split-fused", "fold", "dce", "shard-choose",
                                 "shard-propagate", "shard-partition", "cse", "latency-hiding"]

CORE_PIPELINE: list[str] = ["fold-transpose", "fuse"]


def core_pipeline() -> list[Pass]:
    """Fresh instances of the passes run on each core's program, last."""
    return [PASSES[name]() for name in CORE_PIPELINE]


def pipeline(optlevel: int) -> list[Pass]:
    """Fresh instances of the passes run at `optlevel`."""
    if optlevel not in PIPELINES:
        raise ValueError(f"optimisation level {optlevel} is not one of 1, 2, 3")
    return [PASSES[name]() for name in PIPELINES[optlevel]]


def precision_passes(auto_cast: str, cast_type: str, accumulate_fp32: bool,
                     saturate_infinity: bool) -> list[Pass]:
    """The passes run before the -O pipeline for `--auto-cast` and
    `--enable-saturate-infinity` (none when both are off)."""
    passes: list[Pass] = []
    if auto_cast != "none":
        passes.append(AutoCast(auto_cast, cast_type, accumulate_fp32))
    if saturate_infinity:
        passes.append(SaturateInfinity())
    return passes


def sharding_pipeline(num_cores: int) -> list[Pass]:
    """Fresh instances of the sharding passes for `num_cores` physical cores."""
    return [PASSES[name](num_cores=num_cores) if name.startswith("shard-") else PASSES[name]()
            for name in SHARDING_PIPELINE]
