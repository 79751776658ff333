"""Sharding propagation, GSPMD style: from a few known shardings to every value.

`propagate(fn, seeds, strategies_of)` returns a sharding for every value of `fn` but
constants (a constant is whole in the program and each user takes its block for free, so it
has no sharding of its own). Seeds are never changed. Then, to a fixed point:

- forward, in program order: an op with a result still unknown and some operand known
  takes the strategy that agrees with the most known operand bytes (a constant agrees with
  any non-partial sharding); on a tie it prefers a split strategy that a split operand
  agrees with, then replicate, then a partial one (so a pending sum meets a replicated value
  by being reduced, not by spreading, and a replicated value is not split out of nowhere).
  When every operand is known and none agrees with any strategy, the op is replicated. Its
  unknown results take the strategy's shardings;
- backward, in reverse order: an op whose results are known and some operand unknown
  takes the strategy producing exactly those results that agrees best with its known
  operands; its unknown operands take the strategy's shardings (never a partial one).

Parameters still unknown at the fixed point are then replicated and the fixed point is
sought again (an op waiting for them can decide); values still unknown after that are
replicated. A partial strategy is never chosen forward while an operand is unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nxcc.ir.core import Function, Op, Value
from nxcc.ir.rewrite import constant_value
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.rules import Strategy
from nxcc.passes.sharding.search_graph import UNKNOWN, Choice, Node, SearchGraph

R = Sharding.replicated()
MAX_ROUNDS = 8


def is_constant(v: Value) -> bool:
    return constant_value(v) is not None


def propagate(fn: Function, seeds: Mapping[int, Sharding],
              strategies_of: Callable[[Op], list[Strategy]]) -> dict[int, Sharding]:
    """Shardings (id(value) -> sharding) for every non-constant value of `fn`."""
    graph = SearchGraph(fn, strategies_of, 0)
    return graph.to_dict(propagate_graph(graph, graph.to_list(seeds)))


def propagate_graph(graph: SearchGraph, seeds: list[int]) -> list[int]:
    """`propagate` on a numbered graph: sharding numbers by value number (`UNKNOWN` only for
    constants without a seed). Memoises each op's decisions on `graph`."""
    sh = list(seeds)
    _fixed_point(graph, sh)
    if any(sh[p] == UNKNOWN for p in graph.params):
        for p in graph.params:
            if sh[p] == UNKNOWN:
                sh[p] = 0
        _fixed_point(graph, sh)
    for k in graph.live:
        if sh[k] == UNKNOWN:
            sh[k] = 0
    return sh


def _fixed_point(graph: SearchGraph, sh: list[int]) -> None:
    """Forward and backward sweeps until one changes nothing (or every value is known, when
    the next could change nothing)."""
    unknown = sum(1 for k in graph.live if sh[k] == UNKNOWN)
    nodes = graph.computing
    for _ in range(MAX_ROUNDS):
        if not unknown:
            return
        assigned = 0
        for node in nodes:
            if UNKNOWN in [sh[r] for r in node.results]:
                assigned += _forward(node, sh)
        for node in reversed(nodes):
            assigned += _backward(node, sh)
        if not assigned:
            return
        unknown -= assigned


def _agreement(c: Choice, sh: list[int]) -> int:
    """Bytes of the known operands whose sharding the strategy takes as they are. A constant
    agrees with any non-partial sharding: each core takes its block of it at compile time."""
    return c.constant_score + sum(nbytes for v, want, nbytes in c.live if sh[v] == want)


def _forward_preference(c: Choice, sh: list[int]) -> int:
    """The strategy's preference, but a split strategy that no split operand agrees with (a
    broadcast of a replicated value, say) ranks below replicate: splits spread from split
    values."""
    if c.preference < 3:
        return c.preference
    return c.preference if any(sh[v] == want for v, want in c.splits) else 1


def _forward(node: Node, sh: list[int]) -> int:
    """Forward step of an op with a result still unknown; the number of results set."""
    key = tuple([sh[v] for v in node.values])
    if key in node.forward:
        best = node.forward[key]
    else:
        best = node.forward[key] = _forward_choice(node, sh)
    if best is None:
        return 0
    assigned = 0
    for r, s in zip(node.results, node.choices[best].results, strict=True):
        if sh[r] == UNKNOWN:
            sh[r] = s
            assigned += 1
    return assigned


def _forward_choice(node: Node, sh: list[int]) -> int | None:
    """The strategy (index) the forward step takes, or None to wait (see the module doc)."""
    live = node.live
    known = sum(1 for v in live if sh[v] != UNKNOWN)
    if not known:
        return None
    results = [sh[r] for r in node.results]
    cands = [i for i, c in enumerate(node.choices)
             if all(k in (UNKNOWN, want) for k, want in zip(results, c.results, strict=True))]
    if not cands:
        return None
    choices = node.choices
    best = max(cands, key=lambda i: (_agreement(choices[i], sh),
                                     _forward_preference(choices[i], sh)))
    if known < len(live) and choices[best].partial:
        return None  # a partial result needs partial operands: wait for the others
    if not any(sh[v] == want for v, want, _ in choices[best].live):
        if known < len(live):
            return None
        best = cands[0] if choices[cands[0]].strategy.kind == "replicate" else best
    return best


def _backward(node: Node, sh: list[int]) -> int:
    """Backward step of an op; the number of operands set."""
    if UNKNOWN not in [sh[v] for v in node.live]:
        return 0
    key = tuple([sh[v] for v in node.values])
    if key in node.backward:
        best = node.backward[key]
    else:
        best = node.backward[key] = _backward_choice(node, sh)
    if best is None:
        return 0
    assigned = 0
    c = node.choices[best]
    for v, want, constant, partial in zip(node.operands, c.operands, node.constant,
                                          c.operand_partial, strict=True):
        if constant or partial or sh[v] != UNKNOWN:
            continue
        sh[v] = want
        assigned += 1
    return assigned


def _backward_choice(node: Node, sh: list[int]) -> int | None:
    """The strategy (index) producing the known results that agrees best with the known
    operands, or None when no result is known or no strategy produces them."""
    known = [(i, sh[r]) for i, r in enumerate(node.results) if sh[r] != UNKNOWN]
    if not known:
        return None
    choices = node.choices
    cands = [i for i, c in enumerate(choices) if all(c.results[j] == k for j, k in known)]
    if not cands:
        return None
    return max(cands, key=lambda i: (_agreement(choices[i], sh), choices[i].preference))
