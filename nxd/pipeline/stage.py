"""A pipeline stage's programs on one rank: its forward cut from the model, differentiated.

`build_stage(traced, pieces, recompute)` builds, for the stage holding `pieces`:

- the last stage (the only one with PP = 1):
  ``forward_backward(*P, x_in?, *data) -> (loss_sum, count, g_in?, *grads)``;
- any other stage: ``forward(*P, x_in?, *data) -> (x_out, *stash)`` and
  ``backward(*P, x_in?, *data, *stash, g_out) -> (g_in?, *grads)``.

(P the stage's parameters, `StagePrograms.specs` order; `x_in` absent on the first stage;
`data` the data inputs the stage reads, `StagePrograms.data`.) The two are built as one
function, the forward then the gradient `passes.autodiff` appends, and split where the
backward begins (`passes.autodiff.stash`): the stash is every forward value the backward
reads, as the recomputation leaves it: `recompute` names the granularity of the model's
`checkpoint` segments that are recomputed (`none`: none). Result names: `x_out`, `stash.N`,
`loss_sum`, `token_count`, `g_in`, `grad.NAME`. Grads are of `loss_sum` (the engine divides
by the global count) and each is the rank's slice of the whole gradient, already summed
where the layout needs it:

- a replicated parameter whose gradient each rank holds only a part of (`tp_partial`):
  one all-reduce over the TP group of all of them;
- a weight holding repeated units (replicated key/value heads): the columns of the repeated
  units summed over the ranks holding copies of the same unit (groups of R consecutive
  ranks), so the copies stay equal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from nxcc.ir.builder import Builder
from nxcc.ir.clone import clone_function
from nxcc.ir.core import Module, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import reachable_functions
from nxcc.nxd.model import InputSpec, Model, ModelError, RankSpec
from nxcc.nxd.params import ParamSpec, owned_mask, replicated_columns
from nxcc.nxd.pipeline.partition import Pieces, StageForward, cut_stage
from nxcc.nxd.pipeline.tp_partial import partial_gradients
from nxcc.passes.autodiff import rules  # noqa: F401  (registers the gradient rules)
from nxcc.passes.autodiff.backprop import backpropagate
from nxcc.passes.autodiff.recompute import rematerialize
from nxcc.passes.autodiff.stash import split_forward
from nxcc.passes.dead_code_elimination import DeadCodeElimination

ModelFn = Callable[[Model], tuple[Value, Value]]
RECOMPUTE = ("none", "selective", "full")


@dataclass
class Traced:
    """A model built for one rank: the builder's record and its loss (sum, count)."""

    model: Model
    loss: tuple[Value, Value]

    @property
    def pieces(self) -> int:
        return len(self.model.markers) + 1


def trace(build: ModelFn, rank: RankSpec, cuts: frozenset[int] = frozenset(),
          name: str = "model", dtype: DType = DType.F32) -> Traced:
    """Run `build` on a fresh `Model` for `rank` (stage boundaries `cuts` tell chunked
    computations where to split); ModelError when it returns no (loss_sum, count)."""
    m = Model(rank, frozenset(cuts), dtype, name)
    loss = build(m)
    if (not isinstance(loss, tuple) or len(loss) != 2
            or not all(isinstance(v, Value) for v in loss)):
        raise ModelError("the model's build function must return (loss_sum, count), two "
                         "scalar values (nxd.parallel_cross_entropy returns them)")
    for v in loss:
        if v.type.shape != () or not v.type.dtype.is_float:
            raise ModelError(f"the model's loss values must be float scalars, got {v.type}")
    return Traced(m, loss)


@dataclass
class StagePrograms:
    """One rank's stage module (see the module docstring) and what the engine needs of it."""

    module: Module
    specs: list[ParamSpec]
    data: list[InputSpec]
    first: bool
    last: bool
    owned: dict[str, np.ndarray]       # per parameter: the entries this rank counts
    shared: frozenset[str]             # parameters other stages hold copies of
    x_in: Value | None


def _replica_groups(tp: int, spec: ParamSpec) -> tuple[tuple[int, ...], ...]:
    r = max(s.replicas for s in spec.segments)
    return tuple(tuple(range(h * r, (h + 1) * r)) for h in range(tp // r))


def _slice(b: Builder, g: Value, axis: int, lo: int, hi: int) -> Value:
    start = [0] * g.type.rank
    stop = list(g.type.shape)
    start[axis], stop[axis] = lo, hi
    return b.slice(g, start_indices=tuple(start), limit_indices=tuple(stop),
                   strides=(1,) * g.type.rank)


def _reduce_grads(st: StageForward, b: Builder, grads: list[Value], m: Model,
                  partial: frozenset[str]) -> list[Value]:
    grads = list(grads)
    shared = [i for i, s in enumerate(st.specs) if s.name in partial]
    if shared:
        summed = b.ops("all_reduce", [grads[i] for i in shared],
                       {"reduction": "sum", "replica_groups": m.groups})
        for i, g in zip(shared, summed, strict=True):
            grads[i] = g
    for i, spec in enumerate(st.specs):
        runs = replicated_columns(spec, m.tp_size)
        if not runs or spec.axis is None:
            continue
        g, axis = grads[i], spec.axis
        width = g.type.shape[axis]
        parts, pos = [], 0
        for lo, hi in runs:
            if lo > pos:
                parts.append(_slice(b, g, axis, pos, lo))
            parts.append(b.all_reduce(_slice(b, g, axis, lo, hi), reduction="sum",
                                      replica_groups=_replica_groups(m.tp_size, spec)))
            pos = hi
        if pos < width:
            parts.append(_slice(b, g, axis, pos, width))
        grads[i] = parts[0] if len(parts) == 1 else b.concatenate(*parts, dimension=axis)
    return grads


def _gradients(st: StageForward, seeds: dict[Value, Value], recompute: str, m: Model,
               partial: frozenset[str]) -> list[Value]:
    """The gradients of the stage's parameters (then of x_in, if any), with the
    recomputation asked for and the reductions the layout needs."""
    b = Builder(st.module, st.fn)
    start = len(st.fn.body)
    wrt = [*st.params, *([st.x_in] if st.x_in is not None else [])]
    grads = backpropagate(st.module, st.fn, wrt, seeds, st.stops)
    rematerialize(st.fn, st.segments.get(recompute, []) if recompute != "none" else [], start)
    n = len(st.params)
    return [*_reduce_grads(st, b, grads[:n], m, partial), *grads[n:]]


def _finish(st: StageForward, results: list[Value], names: list[str],
            grads: list[Value]) -> None:
    if st.x_in is not None:
        results, names = [*results, grads[-1]], [*names, "g_in"]
        grads = grads[:-1]
    st.fn.results = [*results, *grads]
    st.fn.result_names = [*names, *(f"grad.{s.name}" for s in st.specs)]


def build_stage(traced: Traced, pieces: range, recompute: str = "none",
                name: str | None = None) -> StagePrograms:
    """The programs of the stage holding `pieces` (see the module docstring)."""
    if recompute not in RECOMPUTE:
        raise ModelError(f"recompute {recompute!r} is not one of {', '.join(RECOMPUTE)}")
    m = traced.model
    partial = partial_gradients(m, list(traced.loss))
    last = pieces.stop == traced.pieces
    st = cut_stage(m, traced.loss, pieces, "forward_backward" if last else "backward")
    if name is not None:
        st.module.name = name
    if last:
        loss_sum, count = st.outputs
        seed = Builder(st.module, st.fn).splat(1.0, loss_sum.type)
        _finish(st, [loss_sum, count], ["loss_sum", "token_count"],
                _gradients(st, {loss_sum: seed}, recompute, m, partial))
        st.module.entry = "forward_backward"
    else:
        assert st.x_out is not None
        keep = len(st.fn.params)
        g_out = Value(st.x_out.type, "g_out")
        st.fn.params.append(g_out)
        start = len(st.fn.body)
        _finish(st, [], [], _gradients(st, {st.x_out: g_out}, recompute, m, partial))
        forward = split_forward(st.fn, start, st.x_out, keep, "forward")
        st.module.functions = {"forward": forward, **st.module.functions}
        st.module.entry = "backward"
    return StagePrograms(st.module, st.specs, st.data, pieces.start == 0, last,
                         owned_masks(m, pieces), _shared(traced, st, pieces), st.x_in)


def owned_masks(m: Model, pieces: range) -> dict[str, np.ndarray]:
    """Each parameter's entries the rank of `m` counts in a sum over all ranks for the
    stage holding `pieces`: `owned_mask`, and none of a parameter an earlier stage holds
    too (that stage's copy counts)."""
    p = Pieces.of(m)
    earlier = p.params_used(range(0, pieces.start))
    mine = p.params_used(pieces)
    out = {}
    for d in m.declared:
        if id(d.value) in mine:
            mask = owned_mask(d.spec, m.tp_rank, m.tp_size)
            out[d.spec.name] = np.zeros_like(mask) if id(d.value) in earlier else mask
    return out


def _shared(traced: Traced, st: StageForward, pieces: range) -> frozenset[str]:
    """The stage's parameters that ops outside its pieces read too."""
    m = traced.model
    p = Pieces.of(m)
    outside = p.params_used(range(0, pieces.start)) | p.params_used(range(pieces.stop,
                                                                          traced.pieces))
    return frozenset(d.spec.name for d in m.declared
                     if id(d.value) in st.mapping and id(d.value) in outside)


def stage_users(traced: Traced, cuts: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """For each parameter read by several stages of the split `cuts` (the first piece of
    each stage but the first), those stages in order."""
    p = Pieces.of(traced.model)
    bounds = [0, *cuts, traced.pieces]
    used = [p.params_used(range(a, b)) for a, b in zip(bounds, bounds[1:], strict=False)]
    out: dict[str, tuple[int, ...]] = {}
    for d in traced.model.declared:
        stages = tuple(s for s, u in enumerate(used) if id(d.value) in u)
        if len(stages) > 1:
            out[d.spec.name] = stages
    return out


def program(module: Module, name: str) -> Module:
    """A module holding function `name` of a stage module as its entry (with the
    computations it calls), dead code removed: what the engine compiles and runs."""
    out = Module(f"{module.name}.{name}", entry=name)
    for fn_name in reachable_functions(module, name):
        out.add_function(clone_function(module.functions[fn_name]))
    DeadCodeElimination().run(out)
    return out
