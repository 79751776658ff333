"""Which forward values a split backward keeps, and which it recomputes: a minimum cut.

A pipeline stage's backward reads forward values; each must either be stashed (kept in
memory from the forward to the backward, for every micro-batch in flight) or recomputed
in the backward from values it has. `choose_stash` picks the set of stashed values of
least bytes, as PyTorch's min-cut rematerialisation partitioner does (AOTAutograd): a
flow network over the forward's values (each split into an in and an out node joined by
an edge of capacity = its bytes), a source feeding every value the backward cannot
recompute and a sink fed by every value the backward reads; a minimum cut is then a set
of values to stash whose removal leaves every read value either stashed or computable from
stashed ones by cheap ops. Of the minimum cuts, the one closest to the sink is taken: at
equal bytes the values the backward reads are kept rather than recomputed, so a stage of
several layers recomputes what each of its layers alone would (their costs add up).

Cheap ops, recomputed rather than kept when that saves bytes (`RECOMPUTABLE`): elementwise
arithmetic, data movement (broadcasts, reshapes, transposes, slices, converts...), reductions
and an `all_gather` (Megatron re-gathers a sequence-parallel input in its backward rather
than keep it gathered, a factor TP smaller). Matrix products, every other collective and
ops with side effects are never recomputed. Parameters (the backward takes them too) and
constants cost nothing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nxcc.ir import ops
from nxcc.ir.core import Op, Value

#: Ops the backward may repeat instead of reading a stashed result (see the docstring).
RECOMPUTABLE = frozenset({
    ops.broadcast_in_dim, ops.reshape, ops.transpose, ops.slice, ops.convert,
    ops.bitcast_convert, ops.concatenate, ops.pad, ops.reverse, ops.iota, ops.copy,
    ops.dynamic_slice, ops.gather, ops.reduce, ops.tp_copy, ops.all_gather,
    ops.optimization_barrier, ops.fused_elementwise, ops.constant,
})


def recomputable(op: Op) -> bool:
    if op.opdef.side_effects:
        return False
    return op.opdef in RECOMPUTABLE or op.opdef.elementwise


@dataclass(frozen=True)
class StashChoice:
    """`stash`: the forward values to keep (in order of first need by the backward);
    `recompute`: ids of the forward ops the backward repeats (constants among them)."""

    stash: list[Value]
    recompute: set[int]


class _Flow:
    """A flow network with integer capacities; Dinic's maximum flow."""

    def __init__(self, n: int) -> None:
        self.head: list[list[int]] = [[] for _ in range(n)]
        self.to: list[int] = []
        self.cap: list[int] = []

    def edge(self, a: int, b: int, capacity: int) -> None:
        self.head[a].append(len(self.to))
        self.to.append(b)
        self.cap.append(capacity)
        self.head[b].append(len(self.to))
        self.to.append(a)
        self.cap.append(0)

    def _levels(self, s: int) -> list[int]:
        level = [-1] * len(self.head)
        level[s] = 0
        queue = deque([s])
        while queue:
            a = queue.popleft()
            for e in self.head[a]:
                if self.cap[e] > 0 and level[self.to[e]] < 0:
                    level[self.to[e]] = level[a] + 1
                    queue.append(self.to[e])
        return level

    def max_flow(self, s: int, t: int) -> None:
        while True:
            level = self._levels(s)
            if level[t] < 0:
                return
            cursor = [0] * len(self.head)
            while self._push(s, t, level, cursor):
                pass

    def _push(self, s: int, t: int, level: list[int], cursor: list[int]) -> bool:
        """One augmenting path along the level graph (iterative DFS); False when none."""
        path: list[int] = []
        a = s
        while a != t:
            edges = self.head[a]
            while cursor[a] < len(edges):
                e = edges[cursor[a]]
                if self.cap[e] > 0 and level[self.to[e]] == level[a] + 1:
                    break
                cursor[a] += 1
            else:
                if a == s:
                    return False
                level[a] = -1  # a dead end: leave it
                a = self.to[path.pop() ^ 1]
                continue
            path.append(edges[cursor[a]])
            a = self.to[edges[cursor[a]]]
        push = min(self.cap[e] for e in path)
        for e in path:
            self.cap[e] -= push
            self.cap[e ^ 1] += push
        return True

    def reaching(self, t: int) -> set[int]:
        """The nodes from which the residual network reaches `t`. After `max_flow`, every
        other node is on the source side of the minimum cut closest to `t`."""
        seen = {t}
        queue = deque([t])
        while queue:
            b = queue.popleft()
            for e in self.head[b]:  # e ^ 1 runs from self.to[e] into b
                a = self.to[e]
                if self.cap[e ^ 1] > 0 and a not in seen:
                    seen.add(a)
                    queue.append(a)
        return seen


SOURCE, SINK = 0, 1


def choose_stash(forward: Sequence[Op], free: Iterable[Value], reads: Sequence[Value]
                 ) -> StashChoice:
    """The least-bytes stash for a backward that reads the forward values `reads` (in the
    order it reads them) and has the values `free` (the parameters both halves take)."""
    values: dict[int, Value] = {id(v): v for v in free}
    free_ids = set(values)
    for op in forward:
        for r in op.results:
            values[id(r)] = r
            if op.opdef is ops.constant:  # copied into the backward, never kept
                free_ids.add(id(r))
    node = {vid: 2 + 2 * i for i, vid in enumerate(values)}  # in node; out = in + 1
    flow = _network(forward, values, free_ids, node, reads)
    flow.max_flow(SOURCE, SINK)
    return _walk(reads, node, free_ids, flow.reaching(SINK))


def _network(forward: Sequence[Op], values: dict[int, Value], free_ids: set[int],
             node: dict[int, int], reads: Sequence[Value]) -> _Flow:
    """The flow network of the module docstring."""
    flow = _Flow(2 + 2 * len(values))
    inf = 2 * sum(v.type.nbytes for v in values.values()) + 1
    for vid in free_ids:
        flow.edge(SOURCE, node[vid], inf)
        flow.edge(node[vid], node[vid] + 1, 0)
    for op in forward:
        cheap = recomputable(op)
        for r in op.results:
            if id(r) in free_ids:
                continue
            flow.edge(node[id(r)], node[id(r)] + 1, r.type.nbytes)
            if not cheap:
                flow.edge(SOURCE, node[id(r)], inf)
                continue
            for v in op.operands:
                if id(v) in node:
                    flow.edge(node[id(v)] + 1, node[id(r)], inf)
    for v in reads:
        flow.edge(node[id(v)] + 1, SINK, inf)
    return flow


def _walk(reads: Sequence[Value], node: dict[int, int], free_ids: set[int],
          sink_side: set[int]) -> StashChoice:
    """From each read value back to the cut: what is stashed (a value whose in node is on
    the source side) and what is recomputed (the ops on the way)."""
    stash: dict[int, Value] = {}
    recompute: set[int] = set()
    done: set[int] = set()
    for read in reads:
        todo = [read]
        while todo:
            v = todo.pop()
            if id(v) in done:
                continue
            done.add(id(v))
            if id(v) in free_ids:
                if v.owner is not None:  # a constant: copied
                    recompute.add(id(v.owner))
                continue
            if node[id(v)] not in sink_side:  # computed in the forward: cut here, stashed
                stash[id(v)] = v
                continue
            assert v.owner is not None
            recompute.add(id(v.owner))
            todo += [u for u in v.owner.operands if id(u) in node]
    return StashChoice(list(stash.values()), recompute)
