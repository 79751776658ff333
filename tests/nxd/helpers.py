"""Running a model of the primitives stage by stage on TP ranks (threads, the interpreter),
for one micro-batch: its loss and its whole gradients, to compare layouts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.multicore import Communicator, run_cores
from nxcc.ir.core import Module
from nxcc.ir.interpreter import IRContext
from nxcc.nxd.model import RankSpec
from nxcc.nxd.params import ParamSpec, init_full_weights, join_parts, shard, unshard
from nxcc.nxd.pipeline.stage import ModelFn, StagePrograms, build_stage, program, trace
from tests.nxd.models.decoder.helpers import RankContext


def run_ranks(modules: Sequence[Module], fn: str, args: Sequence[Sequence[np.ndarray]]
              ) -> list[list[np.ndarray]]:
    """Function `fn` of each TP rank's module, as threads; each rank's outputs."""
    programs = [program(m, fn) for m in modules]
    if len(programs) == 1:
        return [IRContext(programs[0]).call(fn, list(args[0]))]
    comm = Communicator(len(programs))

    def work(r: int):  # noqa: ANN202
        return lambda: RankContext(programs[r], comm.endpoint(r)).call(fn, list(args[r]))

    return run_cores([work(r) for r in range(len(programs))], comm)


def whole_weights(build: ModelFn, seed: int, scale: float = 1.0) -> dict[str, np.ndarray]:
    """The model's weights drawn from `seed`, normal ones times `scale` and ones/zeros
    moved off their values (so no gradient is trivially zero)."""
    specs = trace(build, RankSpec()).model.specs
    rng = np.random.default_rng(seed + 1)
    out = init_full_weights(specs, seed)
    for s in specs:
        if s.init in ("ones", "zeros"):
            out[s.name] = (out[s.name] + rng.normal(0, 0.1, s.shape)).astype(np.float32)
        else:
            out[s.name] = (out[s.name] * scale).astype(np.float32)
    return out


def run_model(build: ModelFn, full: Mapping[str, np.ndarray], data: Mapping[str, np.ndarray],
              tp: int = 1, sp: bool = False, cuts: tuple[int, ...] = (),
              recompute: str = "none", kv_replicator: int = 1
              ) -> tuple[float, float, dict[str, np.ndarray]]:
    """(loss_sum, count, whole gradients) of one micro-batch `data`, the model cut into
    stages at `cuts` on `tp` ranks."""
    micro = next(iter(data.values())).shape[0]
    traced = [trace(build, RankSpec(r, tp, sp, kv_replicator, micro), frozenset(cuts))
              for r in range(tp)]
    bounds = [0, *cuts, traced[0].pieces]
    stages: list[list[StagePrograms]] = [
        [build_stage(t, range(a, b), recompute) for t in traced]
        for a, b in zip(bounds, bounds[1:], strict=False)]

    def weights(s: int, r: int) -> list[np.ndarray]:
        return [shard(p, np.asarray(full[p.name]), r, tp) for p in stages[s][r].specs]

    def inputs(s: int, r: int) -> list[np.ndarray]:
        return [np.asarray(data[d.name]) for d in stages[s][r].data]

    x = [[] for _ in range(tp)]  # the stage input of each rank
    kept = []
    for s in range(len(stages) - 1):
        args = [[*weights(s, r), *x[r], *inputs(s, r)] for r in range(tp)]
        outs = run_ranks([p.module for p in stages[s]], "forward", args)
        kept.append((args, outs))
        x = [[o[0]] for o in outs]
    last = len(stages) - 1
    outs = run_ranks([p.module for p in stages[last]], "forward_backward",
                     [[*weights(last, r), *x[r], *inputs(last, r)] for r in range(tp)])
    loss, count = float(outs[0][0]), float(outs[0][1])
    grads = {last: [o[2 + (1 if last else 0):] for o in outs]}
    g = [o[2] for o in outs] if last else None
    for s in range(last - 1, -1, -1):
        args, fwd = kept[s]
        back = run_ranks([p.module for p in stages[s]], "backward",
                         [[*args[r], *fwd[r][1:], g[r]] for r in range(tp)])
        grads[s] = [o[(1 if s else 0):] for o in back]
        g = [o[0] for o in back] if s else None
    return loss, count, _gather(stages, grads, tp)


def _gather(stages: list[list[StagePrograms]], grads: dict[int, list[list[np.ndarray]]],
            tp: int) -> dict[str, np.ndarray]:
    """Whole gradients: each rank's parts joined over stages, the TP slices put together,
    and the copies several stages hold summed."""
    parts: dict[str, list[list[np.ndarray]]] = {}
    specs: dict[str, ParamSpec] = {}
    copies: dict[str, list[np.ndarray]] = {}
    for s, per_rank in sorted(grads.items()):
        for j, spec in enumerate(stages[s][0].specs):
            if spec.name in stages[s][0].shared:
                whole = unshard(spec, [per_rank[r][j] for r in range(tp)])
                copies.setdefault(spec.name, []).append(whole)
                continue
            specs[spec.name] = spec
            ranks = parts.setdefault(spec.name, [[] for _ in range(tp)])
            for r in range(tp):
                ranks[r].append(per_rank[r][j])
    out = {n: unshard(specs[n].whole(), [join_parts(specs[n], p) for p in ranks])
           for n, ranks in parts.items()}
    for n, arrays in copies.items():
        out[n] = np.sum(arrays, axis=0)
    return out
