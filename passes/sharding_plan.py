"""The partition plan: which strategy every op runs and which reshards its operands need.

`plan_function(fn, hints, n, ...)` walks the function in order. Each value has the sharding
its producer actually gives it (parameters: their hint, as the runtime hands each core its
block). For each op it takes the strategies whose results have the hinted shardings (all
strategies if none does) and picks the cheapest: the op's own cost plus the reshards its
operands need, each priced by `sharding_cost`. A reshard of one value to one sharding is
made once and shared by all its users, and later reshards of the value start from whichever
of its shardings is cheapest (a partial sum all-reduced once is sliced for free after).
Function results end non-partial (a pending reduction is all-reduced, or reduce-scattered
when the result is hinted split).

The plan's cost is what the cost model compares, and the plan is what `shard-partition`
emits, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from ir.attributes import Dense
from ir.core import Function, Op, Value
from ir.flops import op_flops
from ir.sharding import Sharding
from passes.sharding_cost import Cost, collective_traffic
from passes.sharding_rules import Strategy

R = Sharding.replicated()
MATRIX_OPS = ("dot_general", "convolution")


def reshard_kind(src: Sharding, dst: Sharding) -> str | None:
    """How a value goes from `src` to `dst`: None (nothing to do), a collective's opcode, or
    a local step: "slice" (take my block), "to_partial" (keep or zero my copy),
    "split_to_partial" (my block in a zero tensor), "reduce_then_partial"."""
    if src == dst:
        return None
    if src.is_partial:
        if dst.is_replicated:
            return "all_reduce"
        if dst.is_partial:
            return "reduce_then_partial"
        return "reduce_scatter"
    if src.is_replicated:
        return "to_partial" if dst.is_partial else "slice"
    if dst.is_replicated:
        return "all_gather"
    if dst.is_partial:
        return "split_to_partial"
    return "all_to_all"


def reshard_cost(src: Sharding, dst: Sharding, nbytes: int, n: int) -> Cost:
    """Per-core cost of resharding a value of `nbytes` (global) from `src` to `dst`."""
    kind = reshard_kind(src, dst)
    if kind is None or kind in ("slice", "to_partial", "split_to_partial"):
        return Cost()
    if kind == "reduce_then_partial":
        kind = "all_reduce"
    return Cost(collective_bytes=collective_traffic(kind, nbytes, n), collectives=1)


def best_source(available: list[Sharding], dst: Sharding, nbytes: int, n: int
                ) -> tuple[Sharding, Cost]:
    """The cheapest of a value's `available` shardings (its own first, then the reshards
    already made of it) to reshard to `dst`, and that cost; the first on a tie."""
    best, best_cost = available[0], reshard_cost(available[0], dst, nbytes, n)
    for src in available[1:]:
        c = reshard_cost(src, dst, nbytes, n)
        if c.seconds < best_cost.seconds:
            best, best_cost = src, c
    return best, best_cost


def is_weight(v: Value) -> bool:
    """A value read from the NEFF's weights: a non-splat constant."""
    owner = v.owner
    if owner is None or owner.opcode != "constant":
        return False
    d: Dense = owner.attrs["value"]  # type: ignore[assignment]
    return not d.is_splat


def local_bytes(v: Value, s: Sharding) -> float:
    return v.type.nbytes / (s.num_devices if s.split_dim is not None else 1)


def op_cost(op: Op, s: Strategy) -> Cost:
    """Per-core cost of running `op` with strategy `s` (operands already resharded)."""
    divided = any(x.split_dim is not None for x in (*s.operands, *s.results))
    n = max((x.num_devices for x in (*s.operands, *s.results)), default=1)
    cost = Cost(flops=op_flops(op) / (n if divided else 1))
    for v, want in zip(op.operands, s.operands, strict=True):
        if is_weight(v):
            cost.weight_bytes += local_bytes(v, want)
        elif op.opcode in MATRIX_OPS:
            cost.activation_bytes += local_bytes(v, want)
    return cost


@dataclass
class OpPlan:
    """One op's strategy and, per operand, the sharding it is resharded from (the value's
    own, or one it was already resharded to for an earlier user)."""

    op: Op
    strategy: Strategy
    sources: list[Sharding]


@dataclass
class Plan:
    """The plan of a function on `n` devices and its per-core cost."""

    n: int
    ops: list[OpPlan] = field(default_factory=list)
    params: list[Sharding] = field(default_factory=list)
    shardings: dict[int, Sharding] = field(default_factory=dict)
    outputs: list[Sharding] = field(default_factory=list)
    output_sources: list[Sharding] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)


def output_sharding(actual: Sharding, hint: Sharding | None) -> Sharding:
    """What a function result ends as: never partial."""
    if not actual.is_partial:
        return actual
    if hint is not None and hint.split_dim is not None:
        return hint
    return R


def plan_function(fn: Function, hints: Mapping[int, Sharding], n: int,
                  strategies_of: Callable[[Op], list[Strategy]],
                  op_costs: dict[tuple[int, int], Cost] | None = None) -> Plan:
    """The cheapest plan for `fn` that follows `hints` (id(value) -> sharding) where it can.
    `op_costs` caches `op_cost` across plans of the same function (keys: ids of op and
    strategy)."""
    op_costs = {} if op_costs is None else op_costs
    plan = Plan(n)
    actual = plan.shardings
    for p in fn.params:
        hint = hints.get(id(p))
        s = R if hint is None or hint.is_partial else hint
        actual[id(p)] = s
        plan.params.append(s)
    available: dict[int, list[Sharding]] = {id(p): [actual[id(p)]] for p in fn.params}

    def offer(v: Value, dst: Sharding) -> tuple[Sharding, Cost]:
        have = available[id(v)]
        if dst in have:
            return dst, Cost()
        return best_source(have, dst, v.type.nbytes, n)

    for op in fn.body:
        cands = strategies_of(op)
        want = tuple(hints.get(id(r)) for r in op.results)
        producing = getattr(strategies_of, "producing", None)
        if producing is not None and None not in want:
            match = producing(op, want)
        else:
            match = [s for s in cands
                     if all(w is None or w == s.results[i] for i, w in enumerate(want))]
        best, best_cost = None, None
        for s in match or cands:
            key = (id(op), id(s))
            if key not in op_costs:
                op_costs[key] = op_cost(op, s)
            c = replace(op_costs[key])
            for v, dst in zip(op.operands, s.operands, strict=True):
                c.add(offer(v, dst)[1])
            if best_cost is None or c.seconds < best_cost.seconds - 1e-18:
                best, best_cost = s, c
        assert best is not None and best_cost is not None
        sources = []
        for v, dst in zip(op.operands, best.operands, strict=True):
            sources.append(offer(v, dst)[0])
            if dst not in available[id(v)]:
                available[id(v)].append(dst)
        plan.ops.append(OpPlan(op, best, sources))
        plan.cost.add(best_cost)
        for r, s in zip(op.results, best.results, strict=True):
            actual[id(r)] = s
            available[id(r)] = [s]
    for r in fn.results:
        dst = output_sharding(actual[id(r)], hints.get(id(r)))
        src, c = offer(r, dst)
        plan.outputs.append(dst)
        plan.output_sources.append(src)
        plan.cost.add(c)
        if dst not in available[id(r)]:
            available[id(r)].append(dst)
    return plan
