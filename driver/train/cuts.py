"""Automatic pipeline cut points: stages of balanced compute, by the IR's FLOP counts.

Without `model.pipeline_cuts`, a model is split as NxD splits it (`nxd_layer_split`:
whole layers, any remainder on the last stages; NxD's Llama-3.1-405B config puts 126
layers on 32 stages that way). With nxcc's `model.pipeline_split: flops` it is split so
that the stages' compute per
micro-batch (forward + backward FLOPs of their programs, `ir.flops`) is as even as the
model's pieces allow. A layer has ten pieces (`nxd.models.decoder.config.PIECES`: the q/k/v
projection in four column chunks, the attention core, the output projection, the MLP in
four column chunks), so a cut may fall inside a layer, at any piece; a head that weighs a
large part of a layer is balanced that way where whole layers could not be. A cut inside
a layer hands the next stage more than the residual stream (`nxd.models.decoder.handoff`)
and may split a projection's weight by columns; that costs bytes on the link, not FLOPs,
and the split is chosen by FLOPs alone.

`stage_costs` measures the decoder's own stage programs for each kind of stage (first:
with the embedding; middle; last: with the head and loss): a first stage with the first 0
.. 10 pieces of a layer, a last stage with its last 0 .. 10, a middle stage with every run
of a layer's pieces. A stage's cost is its kind's base plus the cost of each run of pieces
it holds in each layer (`StageCosts.of`; exact, which the tests check against the
programs). `balanced_cuts` picks the contiguous split over pieces whose largest stage is
least (bisection over a greedy feasibility test), then among those the one whose lightest
stage is heaviest, then the one with fewest cuts inside layers, then the earliest (dynamic
programming over stages and end pieces).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import TypeVar

from nxcc.ir.flops import module_flops
from nxcc.nxd.models.decoder import DecoderConfig, build_stage, program
from nxcc.nxd.models.decoder import StagePlan as DecoderPlan
from nxcc.nxd.models.decoder.config import CHUNKS, MLP_FIRST, PIECES_PER_LAYER, QKV_FIRST

FIRST, MIDDLE, LAST = 0, 1, 2


Run = tuple[int, int]  # pieces [s, t) of one layer, 0 <= s < t <= PIECES_PER_LAYER


@dataclass(frozen=True)
class StageCosts:
    """FLOPs per micro-batch, per stage kind (FIRST, MIDDLE, LAST): the stage's own part
    (`base`: embedding or head and loss) and, by run of a layer's pieces (s, t), what that
    run adds. A stage's pieces split at layer boundaries into runs; its cost is its base
    plus its runs' (exact: at a layer boundary a stage's programs are the two layers'
    programs side by side; the tests check the sum against the programs). A run is priced
    as a whole, not piece by piece: what a cut inside a layer changes (the gradients of the
    values crossing it, a recomputation segment that starts there) is in the price of the
    runs on either side."""

    base: tuple[int, int, int]
    runs: tuple[dict[Run, int], dict[Run, int], dict[Run, int]]

    def of(self, pieces: range, first: bool, last: bool) -> int:
        """The cost of a stage holding `pieces` (not empty)."""
        kind = LAST if last else (FIRST if first else MIDDLE)
        cost = self.base[kind]
        if first and last:
            cost += self.base[FIRST] - self.base[MIDDLE]  # the embedding
        n, runs = PIECES_PER_LAYER, self.runs[kind]
        a, s = divmod(pieces.start, n)
        b, t = divmod(pieces.stop - 1, n)
        if a == b:
            return cost + runs[(s, t + 1)]
        return cost + runs[(s, n)] + (b - a - 1) * runs[(0, n)] + runs[(0, t + 1)]


def _flops(cfg: DecoderConfig, plan: DecoderPlan) -> int:
    module = build_stage(cfg, plan)
    names = ["forward_backward"] if plan.has_head else ["forward", "backward"]
    return sum(module_flops(program(module, n)) for n in names)


@lru_cache(maxsize=16)
def stage_costs(cfg: DecoderConfig, micro_batch: int, seq_length: int, recompute: str
                ) -> StageCosts:
    """The costs of `cfg`'s stages for one micro-batch (see the module docstring)."""
    def cost(kind: int, first: int, last: int) -> int:
        return _flops(cfg, DecoderPlan(
            first_piece=first, last_piece=last, has_embedding=kind == FIRST,
            has_head=kind == LAST, recompute=recompute, micro_batch=micro_batch,
            seq_length=seq_length))

    n = PIECES_PER_LAYER
    base = (cost(FIRST, 0, 0), 0, cost(LAST, n, n))
    first = {(0, t): cost(FIRST, 0, t) - base[FIRST] for t in range(1, n + 1)}
    last = {(s, n): cost(LAST, s, n) - base[LAST] for s in range(n)}
    middle = {(s, t): cost(MIDDLE, s, t) for s in range(n) for t in range(s + 1, n + 1)}
    return StageCosts(base, (first, middle, last))


StageCost = Callable[[int, int, int], int]  # (stage, first piece, end piece) -> FLOPs
_V = TypeVar("_V")  # what the dynamic programming optimises (a stage cost, a count)
Chosen = tuple[_V, tuple[int, ...]]  # a split's value and its cuts


def balanced_cuts(costs: StageCosts, num_layers: int, stages: int,
                  inside_projections: bool = True) -> tuple[int, ...]:
    """The first piece of each stage but the first, for the split of the model's pieces
    whose largest stage cost is least (each stage at least one piece); among those, the one
    whose lightest stage is heaviest, then the one with fewest cuts inside layers, then
    the earliest. Without `inside_projections` no cut falls between the chunks of a
    projection (a rank holds too few of its columns)."""
    n = PIECES_PER_LAYER
    inner = {QKV_FIRST + c for c in range(1, CHUNKS)} | {MLP_FIRST + c for c in range(1, CHUNKS)}

    def cost(s: int, m: int, e: int) -> int:
        return costs.of(range(m, e), s == 0, s == stages - 1)

    def may_start(m: int) -> bool:
        return inside_projections or m % n not in inner

    return best_split(cost, n * num_layers, stages, may_start, lambda m: m % n != 0)


def best_split(cost: StageCost, units: int, stages: int, may_start: Callable[[int], bool],
               inside: Callable[[int], bool] = lambda m: False) -> tuple[int, ...]:
    """The first unit of each stage but the first, for the split of `units` pieces into
    `stages` runs (each stage at least one; a stage may start at unit m when `may_start(m)`)
    whose largest `cost(stage, first, end)` is least; among those, the one whose lightest
    stage is heaviest, then the one with fewest stages starting `inside` (a layer), then
    the earliest."""
    if not 1 <= stages <= units:
        raise ValueError(f"{units} pieces cannot make {stages} non-empty stages")
    if stages == 1:
        return ()
    cap = _least_cap(cost, may_start, units, stages)

    def lightest(prev: int | None, s: int, m: int, e: int) -> int:
        c = cost(s, m, e)
        return c if prev is None else min(prev, c)

    floor = _best_split(cost, may_start, units, stages, cap, lightest,
                        lambda a, b: a[0] > b[0])[0]

    def fewest_inside(prev: int | None, s: int, m: int, e: int) -> int | None:
        if cost(s, m, e) < floor:
            return None
        return (0 if prev is None else prev) + (s > 0 and inside(m))

    return _best_split(cost, may_start, units, stages, cap, fewest_inside,
                       lambda a, b: (a[0], a[1]) < (b[0], b[1]))[1]


def _least_cap(cost: StageCost, may_start: Callable[[int], bool], units: int, stages: int
               ) -> int:
    """The least largest stage cost of any split, by bisection over `_fits`."""
    lo, hi = 0, max(cost(s, 0, units) for s in range(stages))
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if _fits(cost, may_start, units, stages, mid) else (mid + 1, hi)
    return lo


def _fits(cost: StageCost, may_start: Callable[[int], bool], units: int, stages: int,
          cap: int) -> bool:
    """Whether a split exists whose every stage costs at most `cap`: each stage but the last
    greedily takes as many pieces as fit (leaving one for each later stage, ending where
    the next may start); stage costs grow with the pieces held, so a later start never
    hurts the stages after."""
    m = 0
    for s in range(stages - 1):
        room = units - (stages - 1 - s)
        end = None  # the farthest end that fits and where the next stage may start
        for e in range(m + 1, room + 1):
            if cost(s, m, e) > cap:
                break
            if may_start(e):
                end = e
        if end is None:
            return False
        m = end
    return cost(stages - 1, m, units) <= cap


def _best_split(cost: StageCost, may_start: Callable[[int], bool], units: int, stages: int,
                cap: int,
                extend: Callable[[_V | None, int, int, int], _V | None],
                better: Callable[[Chosen[_V], Chosen[_V]], bool]) -> Chosen[_V]:
    """The split with every stage at most `cap` that `better` prefers, by dynamic
    programming over (stage, end piece): extend(prefix value or None, s, m, e) is the value
    once stage s holds pieces [m, e) (None: not allowed)."""
    row: list[Chosen[_V] | None] = [None] * (units + 1)
    for e in range(1, units + 1):
        value = extend(None, 0, 0, e) if cost(0, 0, e) <= cap else None
        row[e] = None if value is None else (value, ())
    for s in range(1, stages):
        new: list[Chosen[_V] | None] = [None] * (units + 1)
        for e in ([units] if s == stages - 1 else range(s + 1, units + 1)):
            for m in range(e - 1, s - 1, -1):
                if cost(s, m, e) > cap:
                    break
                prev = row[m] if may_start(m) else None
                value = None if prev is None else extend(prev[0], s, m, e)
                if value is None or prev is None:
                    continue
                cand = (value, (*prev[1], m))
                best = new[e]
                if best is None or better(cand, best):
                    new[e] = cand
        row = new
    chosen = row[units]
    assert chosen is not None
    return chosen


def stage_pieces(cuts: tuple[int, ...], num_layers: int) -> list[range]:
    """Each stage's pieces for the cuts `cuts` (the first piece of each stage but the
    first)."""
    ends = [*cuts, PIECES_PER_LAYER * num_layers]
    return [range(b, e) for b, e in zip([0, *cuts], ends, strict=True)]


def per_stage_flops(costs: StageCosts, cuts: tuple[int, ...], num_layers: int) -> list[int]:
    """Each stage's FLOPs per micro-batch for the piece cuts `cuts`."""
    runs = stage_pieces(cuts, num_layers)
    return [costs.of(r, i == 0, i == len(runs) - 1) for i, r in enumerate(runs)]


def nxd_layer_split(num_layers: int, stages: int) -> tuple[int, ...]:
    """The layers of each stage when `stages` does not divide `num_layers`, as NxD's
    automatic partition gives them (`neuronx_distributed.pipeline.partition.
    create_partitions`): every stage `num_layers // stages` layers, and the last
    `num_layers % stages` stages one more (the first stages, which 1F1B keeps the most
    micro-batches in flight on, hold the fewest). ValueError with fewer layers than
    stages."""
    if not 1 <= stages <= num_layers:
        raise ValueError(f"{num_layers} layers cannot make {stages} stages of a layer or more")
    base, extra = divmod(num_layers, stages)
    return tuple(base + (s >= stages - extra) for s in range(stages))


def split_cuts(layers_per_stage: tuple[int, ...]) -> tuple[int, ...]:
    """Piece cuts (the first piece of each stage but the first) of a split by whole
    layers."""
    ends, total = [], 0
    for n in layers_per_stage[:-1]:
        total += n
        ends.append(PIECES_PER_LAYER * total)
    return tuple(ends)


def stage_flops(cfg: DecoderConfig, cuts: tuple[int, ...], micro_batch: int,
                seq_length: int, recompute: str) -> list[int]:
    """Each stage's FLOPs per micro-batch for the piece cuts `cuts`, from the stages' own
    programs (a stage alike another but for which layers it holds is built once): what
    `per_stage_flops` gives without building the cost model's every run of pieces."""
    runs = stage_pieces(cuts, cfg.num_layers)
    out = []
    for i, r in enumerate(runs):
        shift = r.start - r.start % PIECES_PER_LAYER
        out.append(_cached_flops(cfg, DecoderPlan(
            first_piece=r.start - shift, last_piece=r.stop - shift, has_embedding=i == 0,
            has_head=i == len(runs) - 1, recompute=recompute, micro_batch=micro_batch,
            seq_length=seq_length)))
    return out


@lru_cache(maxsize=64)
def _cached_flops(cfg: DecoderConfig, plan: DecoderPlan) -> int:
    return _flops(cfg, plan)


def layer_cuts(cut_after: tuple[int, ...]) -> tuple[int, ...]:
    """`model.pipeline_cuts` as piece cuts: a stage ending with layer N ends before the
    first piece of layer N + 1."""
    return tuple(PIECES_PER_LAYER * (c + 1) for c in cut_after)
