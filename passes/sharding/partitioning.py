"""The partition plan: which strategy every op runs and which reshards its operands need.

`plan_function(fn, hints, n, ...)` walks the function in order. Each value has the sharding
its producer actually gives it (parameters: their hint, as the runtime hands each core its
block). For each op it takes the strategies whose results have the hinted shardings (all
strategies if none does) and picks the cheapest: the op's own cost plus the reshards its
operands need, each priced by `cost_model`. A reshard of one value to one sharding is
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

from nxcc.ir import ops
from nxcc.ir.core import Function, Op, Value
from nxcc.ir.flops import op_flops
from nxcc.ir.rewrite import constant_value
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.cost_model import Cost, collective_traffic
from nxcc.passes.sharding.rules import Strategy
from nxcc.passes.sharding.search_graph import UNKNOWN, Node, SearchGraph

R = Sharding.replicated()
MATRIX_OPS = (ops.dot_general, ops.convolution)


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


def reshard_cost(src: Sharding, dst: Sharding, nbytes: int, n: int,
                 shape: tuple[int, ...] | None = None) -> Cost:
    """Per-core cost of resharding a value of `nbytes` (global) from `src` to `dst`. With
    the value's `shape`, a collective over a split that is not the outermost dimension
    (of size > 1) also pays a relayout (`relayout_bytes`)."""
    kind = reshard_kind(src, dst)
    if kind is None or kind in ("slice", "to_partial", "split_to_partial"):
        return Cost()
    if kind == "reduce_then_partial":
        kind = "all_reduce"
    cost = Cost(collective_bytes=collective_traffic(kind, nbytes, n), collectives=1)
    if shape is not None:
        cost.activation_bytes = relayout_bytes(kind, src, dst, shape, nbytes, n)
    return cost


def relayout_bytes(kind: str, src: Sharding, dst: Sharding, shape: tuple[int, ...],
                   nbytes: int, n: int) -> float:
    """HBM bytes one core reads and writes to rearrange a collective's buffer: collectives
    move whole contiguous blocks, so a split on an inner dimension (a block of heads of
    [batch, seq, hidden] is a strided set of rows) is gathered along the outermost dimension
    and transposed after (all_gather; all_to_all from such a split) or transposed before
    (reduce_scatter, all_to_all to such a split): the full tensor (a block of it for
    all_to_all) read and written once more. 0 when the split is outermost."""
    outer = next((d for d, size in enumerate(shape) if size > 1), 0)
    inner = [x.split_dim for x in (src, dst)
             if x.split_dim is not None and x.split_dim != outer]
    if kind == "all_reduce" or not inner:
        return 0.0
    return 2.0 * (nbytes / n if kind == "all_to_all" else nbytes)


def best_source(available: list[Sharding], dst: Sharding, nbytes: int, n: int,
                shape: tuple[int, ...] | None = None) -> tuple[Sharding, Cost]:
    """The cheapest of a value's `available` shardings (its own first, then the reshards
    already made of it) to reshard to `dst`, and that cost; the first on a tie."""
    best, best_cost = available[0], reshard_cost(available[0], dst, nbytes, n, shape)
    for src in available[1:]:
        c = reshard_cost(src, dst, nbytes, n, shape)
        if c.seconds < best_cost.seconds:
            best, best_cost = src, c
    return best, best_cost


def is_weight(v: Value) -> bool:
    """A value read from the NEFF's weights: a non-splat constant."""
    d = constant_value(v)
    return d is not None and not d.is_splat


def local_bytes(v: Value, s: Sharding) -> float:
    return v.type.nbytes / (s.num_devices if s.split_dim is not None else 1)


def op_cost(op: Op, s: Strategy, readers: tuple[int, ...] | None = None) -> Cost:
    """Per-core cost of running `op` with strategy `s` (operands already resharded).
    `readers` gives, per operand, how many matrix ops read that value: an activation that
    k of them read (the query, key and value projections of one input) is streamed once
    and reused, so each is charged 1/k of it."""
    divided = any(x.split_dim is not None for x in (*s.operands, *s.results))
    n = max((x.num_devices for x in (*s.operands, *s.results)), default=1)
    cost = Cost(flops=op_flops(op) / (n if divided else 1))
    for i, (v, want) in enumerate(zip(op.operands, s.operands, strict=True)):
        if is_weight(v):
            cost.weight_bytes += local_bytes(v, want)
        elif op.opdef in MATRIX_OPS:
            cost.activation_bytes += local_bytes(v, want) / max(readers[i] if readers else 1, 1)
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
                  strategies_of: Callable[[Op], list[Strategy]]) -> Plan:
    """The cheapest plan for `fn` that follows `hints` (id(value) -> sharding) where it can."""
    graph = SearchGraph(fn, strategies_of, n)
    return plan_graph(graph, graph.to_list(hints), record=True)


def plan_graph(graph: SearchGraph, hints: list[int], record: bool = False) -> Plan:
    """`plan_function` on a numbered graph with hints by value number. Without `record` only
    the plan's cost is filled in (what the search compares). Memoises each op's step on
    `graph`: its strategy, cost and operand sources depend only on its results' hints and
    its operands' available shardings."""
    n = graph.n
    shardings = graph.shardings
    plan = Plan(n)
    available: list[tuple[int, ...]] = [()] * len(graph.values)
    for p in graph.params:
        hint = hints[p]
        s = 0 if hint == UNKNOWN or shardings[hint].is_partial else hint
        available[p] = (s,)
    flops = weight_bytes = activation_bytes = collective_bytes = 0.0
    collectives = 0
    for node in graph.nodes:
        key = (tuple([hints[r] for r in node.results]),
               tuple([available[v] for v in node.operands]))
        step = node.plans.get(key)
        if step is None:
            step = node.plans[key] = _plan_op(graph, node, key[0], available)
        best, cost, sources, updates = step
        flops += cost.flops  # summed in program order, as Cost.add would
        weight_bytes += cost.weight_bytes
        activation_bytes += cost.activation_bytes
        collective_bytes += cost.collective_bytes
        collectives += cost.collectives
        for v, have in updates:
            available[v] = have
        if record:
            plan.ops.append(OpPlan(node.op, node.choices[best].strategy,
                                   [shardings[x] for x in sources]))
    plan.cost = Cost(flops, weight_bytes, activation_bytes, collective_bytes, collectives)
    actual = [have[0] if have else UNKNOWN for have in available]
    for r in graph.fn.results:
        k = graph.number[id(r)]
        wanted = None if hints[k] == UNKNOWN else shardings[hints[k]]
        dst = output_sharding(shardings[actual[k]], wanted)
        src, c = _offer(graph, k, graph.intern(dst), available[k])
        plan.outputs.append(dst)
        plan.output_sources.append(shardings[src])
        plan.cost.add(c)
        if graph.intern(dst) not in available[k]:
            available[k] += (graph.intern(dst),)
    if record:
        plan.params = [shardings[actual[p]] for p in graph.params]
        plan.shardings.update((id(v), shardings[s]) for v, s in zip(graph.values, actual,
                                                                   strict=True))
    return plan


def _offer(graph: SearchGraph, v: int, dst: int, have: tuple[int, ...]) -> tuple[int, Cost]:
    """The sharding value `v` is resharded from to reach `dst` (one of `have`, its available
    shardings), and the cost."""
    if dst in have:
        return dst, Cost()
    t = graph.values[v].type
    src, cost = best_source([graph.shardings[h] for h in have], graph.shardings[dst],
                            t.nbytes, graph.n, t.shape)
    return graph.intern(src), cost


Step = tuple[int, Cost, tuple[int, ...], tuple[tuple[int, tuple[int, ...]], ...]]


def _plan_op(graph: SearchGraph, node: Node, want: tuple[int, ...],
             available: list[tuple[int, ...]]) -> Step:
    """One op's step of the plan: (strategy index, cost, the sharding each operand is
    resharded from, the new available shardings as (value number, shardings) in order)."""
    if UNKNOWN not in want:
        match = node.by_results.get(want, [])
    else:
        match = [i for i, c in enumerate(node.choices)
                 if all(w in (UNKNOWN, x) for w, x in zip(want, c.results, strict=True))]
    best, best_cost = None, None
    for i in match or range(len(node.choices)):
        c = node.choices[i]
        if i not in node.op_costs:
            node.op_costs[i] = op_cost(node.op, c.strategy, node.readers)
        total = replace(node.op_costs[i])
        for v, dst in zip(node.operands, c.operands, strict=True):
            total.add(_offer(graph, v, dst, available[v])[1])
        if best_cost is None or total.seconds < best_cost.seconds - 1e-18:
            best, best_cost = i, total
    assert best is not None and best_cost is not None
    sources = []
    updates = []
    mine = {v: available[v] for v in node.operands}
    for v, dst in zip(node.operands, node.choices[best].operands, strict=True):
        sources.append(_offer(graph, v, dst, mine[v])[0])
        if dst not in mine[v]:
            mine[v] += (dst,)
            updates.append((v, mine[v]))
    updates.extend((r, (s,)) for r, s in zip(node.results, node.choices[best].results,
                                               strict=True))
    return best, best_cost, tuple(sources), tuple(updates)
