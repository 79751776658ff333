"""Choosing shardings with the cost model: a search over the strategies of the matrix ops.

Each dot_general and convolution (an *anchor*) has candidates: replicate, batch, column and
row (see `rules.linalg`). A choice of one candidate per anchor seeds its operands
and results; `propagate` fills in every other value; `plan_function` prices the result per
core (`cost_model`). The search keeps the cheapest choice it finds:

1. three starting points: a greedy construction (anchors in program order, each taking the
   candidate that prices best while the anchors after it are still free, so propagation
   carries its choice through them: a column-parallel matmul makes the next one
   row-parallel where that pays), every anchor split by its batch, and Megatron-LM's
   column- then row-parallel blocks (`tensor_parallel`; the anchors it leaves out take
   the strategies their plan ran);
2. from the cheapest, coordinate descent: for every anchor in program order try each of its
   other candidates and keep a change that lowers the cost; repeat until a sweep changes
   nothing (at most `MAX_SWEEPS`).

A function with no matrix op has its parameters as anchors instead (candidates: whole, or
split on any dimension that divides), so an elementwise or reduction program is split too.

Every choice is priced on one `SearchGraph` of the function, whose memos of each op's
propagation and planning step make a choice cost little more than a walk over the ops.

Shardings already on values (from IR text or a frontend's annotations) are kept as seeds
that the search never overrides.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.partitioning import Plan, plan_graph
from nxcc.passes.sharding.propagation import is_constant, propagate_graph
from nxcc.passes.sharding.rules import Strategy, splittable, strategies
from nxcc.passes.sharding.search_graph import UNKNOWN, SearchGraph
from nxcc.passes.sharding.tensor_parallel import tensor_parallel_start

log = logging.getLogger("nxcc.passes.sharding")

ANCHORS = (ops.dot_general, ops.convolution)
CANDIDATE_KINDS = ("replicate", "batch", "column", "row")
MAX_SWEEPS = 4


@dataclass
class Choice:
    """The chosen strategy per anchor, the seeds it gives, and the priced plan. During the
    search `seeds` is left empty and `plan` has only its cost; `choose` returns both whole."""

    strategies: dict[int, Strategy]
    seeds: dict[int, Sharding]
    plan: Plan


class StrategyTable:
    """`strategies` of every op of a function, computed once; call it with an op."""

    def __init__(self, fn: Function, n: int, module: Module | None) -> None:
        self.table = {id(op): strategies(op, n, module) for op in fn.body}
        self.by_results: dict[int, dict[tuple[Sharding, ...], list[Strategy]]] = {}
        for key, found in self.table.items():
            index: dict[tuple[Sharding, ...], list[Strategy]] = {}
            for s in found:
                index.setdefault(s.results, []).append(s)
            self.by_results[key] = index

    def __call__(self, op: Op) -> list[Strategy]:
        return self.table[id(op)]

    def producing(self, op: Op, results: tuple[Sharding, ...]) -> list[Strategy]:
        """The strategies of `op` whose results are exactly `results`."""
        return self.by_results[id(op)].get(results, [])


def strategy_table(fn: Function, n: int, module: Module | None) -> StrategyTable:
    """`strategies` of every op of `fn`, computed once."""
    return StrategyTable(fn, n, module)


def fit_to_cores(s: Sharding, n: int) -> Sharding:
    """`s` for `n` devices: a split keeps its dimension, a partial value its reduction, over
    `n` devices (an annotation written for another mesh size, e.g. JAX's 8-device mesh, still
    says which dimension to split)."""
    if s.is_replicated or s.num_devices == n:
        return s
    rank = len(s.tiles) - (1 if s.is_partial else 0)
    if s.is_partial:
        return Sharding.partial(rank, n, s.reduction or "sum")
    d = s.split_dim
    assert d is not None
    return Sharding.split(rank, d, n)


def given_shardings(fn: Function, n: int | None = None) -> dict[int, Sharding]:
    """The shardings already on `fn`'s values (fitted to `n` devices when given); one that
    does not fit its value (a tiled dimension that does not divide) is dropped, so the value
    ends up replicated."""
    values = [*fn.params, *(r for op in fn.body for r in op.results)]
    found = {}
    for v in values:
        if v.sharding is None:
            continue
        s = v.sharding if n is None else fit_to_cores(v.sharding, n)
        if s != v.sharding:
            log.info("sharding of %s: %s fitted to %d cores as %s", v.name, v.sharding, n, s)
        try:
            s.check(v.type.shape)
        except ValueError as exc:
            log.debug("sharding of %s ignored: %s", v.name, exc)
            continue
        found[id(v)] = s
    return found


def parameter_options(p: Value, n: int) -> list[Strategy]:
    """A parameter as an anchor: whole, or split on a dimension that divides by `n`."""
    found = [Strategy("replicate", "replicate", (), (Sharding.replicated(),))]
    for d, size in enumerate(p.type.shape):
        if splittable(size, n):
            found.append(Strategy(f"split{d}", "batch", (), (Sharding.split(p.type.rank, d, n),)))
    return found


def seeds_for(anchors: list[Op | Value], chosen: Mapping[int, Strategy],
              given: Mapping[int, Sharding]) -> dict[int, Sharding]:
    """Seeds from the anchors' strategies (first anchor wins a shared value); `given` wins."""
    seeds = dict(given)
    for op in anchors:
        s = chosen.get(id(op))
        if s is None:
            continue
        if isinstance(op, Value):
            seeds.setdefault(id(op), s.results[0])
            continue
        for r, want in zip(op.results, s.results, strict=True):
            seeds.setdefault(id(r), want)
        for v, want in zip(op.operands, s.operands, strict=True):
            if is_constant(v) or want.is_partial:
                continue
            seeds.setdefault(id(v), want)
    return seeds


def choose(fn: Function, n: int, module: Module | None = None) -> Choice:
    """The cheapest choice of anchor strategies the search finds for `fn` on `n` devices."""
    search = ChoiceSearch(fn, n, module)
    starts = [search.evaluate(search.construct()), search.evaluate(search.all_batch()),
              search.tensor_parallel()]
    current = search.descend(min(starts, key=lambda c: c.plan.cost.seconds))
    best = search.complete(current)
    log.debug("sharding: %d anchors, %d plans priced, best %.3g s per core (%s)",
              len(search.anchors), len(search.cache), best.plan.cost.seconds,
              ", ".join(best.strategies[id(op)].name if id(op) in best.strategies else "free"
                        for op in search.anchors))
    return best


def anchors_of(fn: Function, n: int, strategies_of: StrategyTable,
               given: Mapping[int, Sharding]
               ) -> tuple[list[Op | Value], dict[int, list[Strategy]]]:
    """The anchors of `fn` whose results have no given sharding, and each one's candidates:
    its matrix ops, or its parameters when it has none."""
    if not any(op.opdef in ANCHORS for op in fn.body):
        params = [p for p in fn.params if id(p) not in given]
        return list(params), {id(p): parameter_options(p, n) for p in params}
    matrix_ops = [op for op in fn.body
                  if op.opdef in ANCHORS and all(id(r) not in given for r in op.results)]
    options = {id(op): [s for s in strategies_of(op) if s.kind in CANDIDATE_KINDS]
               for op in matrix_ops}
    return list(matrix_ops), options


class ChoiceSearch:
    """The search of one function: its anchors and candidates, the graph every choice is
    priced on, and the choices priced so far (by the names of their strategies)."""

    def __init__(self, fn: Function, n: int, module: Module | None) -> None:
        strategies_of = strategy_table(fn, n, module)
        self.given = given_shardings(fn, n)
        self.anchors, self.options = anchors_of(fn, n, strategies_of, self.given)
        self.graph = graph = SearchGraph(fn, strategies_of, n)
        self.given_list = graph.to_list(self.given)
        # each candidate's own seeds, numbered, in the order `seeds_for` sets them
        self.own = {(id(op), id(s)): [(graph.number[k], graph.intern(x))
                                      for k, x in seeds_for([op], {id(op): s}, {}).items()]
                    for op in self.anchors for s in self.options[id(op)]}
        self.cache: dict[tuple[str, ...], Choice] = {}
        self.plans: dict[tuple[int, ...], Plan] = {}  # by propagated hints: choices often agree

    def evaluate(self, chosen: dict[int, Strategy]) -> Choice:
        """`chosen` priced (remembered by the names of its strategies)."""
        key = tuple(chosen[id(op)].name if id(op) in chosen else "" for op in self.anchors)
        if key not in self.cache:
            hints = tuple(propagate_graph(self.graph, self.numbered_seeds(chosen)))
            if hints not in self.plans:
                self.plans[hints] = plan_graph(self.graph, list(hints))
            self.cache[key] = Choice(dict(chosen), {}, self.plans[hints])
        return self.cache[key]

    def numbered_seeds(self, chosen: dict[int, Strategy]) -> list[int]:
        """`seeds_for(anchors, chosen, given)`, numbered as the graph numbers values."""
        seeds = list(self.given_list)
        for op in self.anchors:
            if id(op) in chosen:
                for k, x in self.own[id(op), id(chosen[id(op)])]:
                    if seeds[k] == UNKNOWN:
                        seeds[k] = x
        return seeds

    def construct(self) -> dict[int, Strategy]:
        """Anchors in program order, each taking its best candidate while the later ones
        are left to propagation."""
        chosen: dict[int, Strategy] = {}
        for op in self.anchors:
            best = None
            for s in self.options[id(op)]:
                trial = self.evaluate({**chosen, id(op): s})
                if best is None or trial.plan.cost.seconds < best[1] * (1 - 1e-9):
                    best = (s, trial.plan.cost.seconds)
            assert best is not None
            chosen[id(op)] = best[0]
        return chosen

    def all_batch(self) -> dict[int, Strategy]:
        """Every anchor split by its batch (its first candidate when it has no batch split)."""
        return {id(op): next((s for s in self.options[id(op)] if s.kind == "batch"),
                             self.options[id(op)][0]) for op in self.anchors}

    def tensor_parallel(self) -> Choice:
        """The Megatron-LM start priced, its free anchors given the strategies their plan
        ran (when that is not dearer), so descent has a strategy for every anchor."""
        start = self.evaluate(tensor_parallel_start(self.anchors, self.options))
        ran = {id(p.op): p.strategy for p in self.complete(start).plan.ops}
        filled = dict(start.strategies)
        for op in self.anchors:
            s = ran.get(id(op))
            if s is not None and id(op) not in filled and any(s is o for o in
                                                              self.options[id(op)]):
                filled[id(op)] = s
        full = self.evaluate(filled)
        return full if full.plan.cost.seconds <= start.plan.cost.seconds else start

    def descend(self, current: Choice) -> Choice:
        """Coordinate descent from `current`: sweeps over the anchors, each trying its other
        candidates and keeping a change that lowers the cost, until a sweep changes nothing
        (at most `MAX_SWEEPS`)."""
        for _ in range(MAX_SWEEPS if self.anchors else 0):
            improved = False
            for op in self.anchors:
                for s in self.options[id(op)]:
                    if s is current.strategies.get(id(op)):
                        continue
                    trial = self.evaluate({**current.strategies, id(op): s})
                    if trial.plan.cost.seconds < current.plan.cost.seconds * (1 - 1e-9):
                        current, improved = trial, True
            if not improved:
                break
        return current

    def complete(self, current: Choice) -> Choice:
        """`current` with its seeds and its plan recorded whole."""
        seeds = seeds_for(self.anchors, current.strategies, self.given)
        hints = propagate_graph(self.graph, self.graph.to_list(seeds))
        return replace(current, seeds=seeds, plan=plan_graph(self.graph, hints, record=True))
