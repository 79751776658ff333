"""A model of `nxcc.nxd` as the engine's stage: one way to cut, shard and hand a model over.

Every model the engine cuts (the built-in decoder, a user's `model.module`) is a build
function of the primitives. `stage_build(traced, pieces, recompute, full, ...)` cuts the
rank's traced model at its stage's pieces and differentiates it (`nxd.pipeline.stage`),
slices the whole initial weights `full` for the rank (`nxd.params.shard`), and says what the
engine needs: which batch arrays the programs read, each parameter's entries counted in the
global gradient norm, the parameters other stages hold copies of, the peak activation bytes,
and how to slice whole tensors for the rank (resuming another layout's checkpoint).

`join_tensor(specs)` is the inverse for checkpoints: one tensor's parts (per TP rank, in
stage order) joined into the whole one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from nxcc.backend.program.memory_plan import peak_activation_bytes
from nxcc.driver.train.errors import TrainConfigError
from nxcc.driver.train.stage import StageBuild
from nxcc.nxd.model import ModelError
from nxcc.nxd.params import ParamSpec, join_parts, shard, unshard
from nxcc.nxd.pipeline.partition import held_specs
from nxcc.nxd.pipeline.stage import Traced, build_stage, stage_users


def shared_copies(traced: Traced, cuts: tuple[int, ...], key: str
                  ) -> tuple[tuple[int, ...], dict[str, int]]:
    """The stages that hold copies of the parameters several stages read (the engine sums
    their gradients over one group, so there may be one such set of stages), and each such
    parameter's index among the first holder's parameters."""
    users = stage_users(traced, cuts)
    if not users:
        return (), {}
    sets = sorted(set(users.values()))
    if len(sets) > 1:
        names = ", ".join(f"{n} (stages {', '.join(map(str, s))})" for n, s in users.items())
        raise TrainConfigError(key, f"parameters are shared by different sets of pipeline "
                                    f"stages ({names}); nxcc sums shared gradients over one "
                                    "set: share them between the same stages")
    stages = sets[0]
    bounds = [0, *cuts, traced.pieces]
    first = held_specs(traced.model, range(bounds[stages[0]], bounds[stages[0] + 1]))
    index = {s.name: i for i, s in enumerate(first)}
    return stages, {n: index[n] for n in users}


def stage_build(traced: Traced, pieces: range, recompute: str, full: dict[str, np.ndarray],
                key: str, shared_stages: tuple[int, ...] = (),
                shared_index: dict[str, int] | None = None, name: str | None = None
                ) -> StageBuild:
    """The engine's stage of the rank `traced` was built for (see the module docstring);
    TrainConfigError under `key` when the model cannot be cut there."""
    try:
        sp = build_stage(traced, pieces, recompute, name)
    except ModelError as exc:
        raise TrainConfigError(key, str(exc)) from None
    m = traced.model
    rank, tp = m.tp_rank, m.tp_size
    specs = sp.specs

    def cut(whole: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {s.name: shard(s, whole[s.name], rank, tp) for s in specs}

    mine = cut(full)
    names = [i.name for i in m.inputs]
    peak = max(peak_activation_bytes(sp.module, fn) for fn in sp.module.functions)
    return StageBuild(
        sp.module, [(s.name, mine[s.name]) for s in specs],
        peak_activation_bytes=peak, pipeline_shared=sp.shared,
        norm_masks={n: mask.astype(np.float32) for n, mask in sp.owned.items()},
        extra={"slice": cut}, data=tuple(names.index(d.name) for d in sp.data),
        input_dtypes=tuple(np.dtype(i.type.dtype.numpy) for i in m.inputs),
        pipeline_shared_stages=shared_stages if sp.shared else (),
        pipeline_shared_index=dict(shared_index or {}))


def join_tensor(specs: Callable[[int, int], Sequence[ParamSpec]]
                ) -> Callable[[str, list[list[np.ndarray]], int], np.ndarray]:
    """`reshard`'s join: a tensor from its parts as a layout of TP size len(parts) and
    `kv_replicator` wrote them (`specs(tp, kv_replicator)` the model's whole specs there):
    each TP rank's pipeline parts joined (a chunked projection a cut split), or, for a
    tensor several stages hold whole copies of, the first copy; then the TP slices."""
    made: dict[tuple[int, int], dict[str, ParamSpec]] = {}

    def join(name: str, parts: list[list[np.ndarray]], kv_replicator: int) -> np.ndarray:
        key = (len(parts), kv_replicator)
        if key not in made:
            made[key] = {s.name: s.whole() for s in specs(*key)}
        spec = made[key][name]
        if spec.pipeline_chunks == 1:
            parts = [stages[:1] for stages in parts]
        return unshard(spec, [join_parts(spec, stages) for stages in parts])

    return join
