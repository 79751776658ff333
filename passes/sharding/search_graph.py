"""A function numbered for sharding propagation and planning: values and shardings as ints.

`SearchGraph(fn, strategies_of, n)` numbers every value of `fn` (parameters, then each op's
results in program order, constants included), interns every sharding its ops' strategies
mention (replicated is number 0), and keeps each op's strategies as tuples of sharding
numbers. `propagation` and `partitioning` run on it with lists indexed by value
number (`UNKNOWN` for a value with no sharding yet).

Contract for the memos (`Node.forward`, `Node.backward`, `Node.plans`): an op's decision in
propagation depends only on the shardings of its operands and results, and in planning only
on its results' hints and its operands' available shardings, so each is memoised under
exactly those keys. The memos stay valid for every propagation and plan of the same graph
(the sharding search prices hundreds of choices on one graph); a graph is not shared between
functions or device counts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nxcc.ir import ops
from nxcc.ir.core import Function, Op, Value
from nxcc.ir.rewrite import constant_value
from nxcc.ir.sharding import Sharding
from nxcc.passes.sharding.cost_model import Cost
from nxcc.passes.sharding.rules import Strategy

UNKNOWN = -1
MATRIX_OPS = (ops.dot_general, ops.convolution)
R = Sharding.replicated()
_PREFERENCE = {"split": 3, "batch": 3, "column": 3, "row": 2, "replicate": 2, "partial": 1}


class Choice:
    """One strategy of one op in numbers: what each operand must have, what each result
    has, and the constants propagation ranks it by."""

    __slots__ = ("strategy", "operands", "results", "operand_partial", "partial", "preference",
                 "constant_score", "live", "splits")

    def __init__(self, graph: SearchGraph, node: Node, s: Strategy) -> None:
        self.strategy = s
        self.operands = tuple(graph.intern(x) for x in s.operands)
        self.results = tuple(graph.intern(x) for x in s.results)
        self.operand_partial = tuple(x.is_partial for x in s.operands)
        self.partial = s.kind == "partial"
        self.preference = _PREFERENCE.get(s.kind, 0)
        #: agreement bytes of the constant operands (a constant agrees unless partial)
        self.constant_score = sum(node.nbytes[i] for i, want in enumerate(s.operands)
                                  if node.constant[i] and not want.is_partial)
        #: (operand number, wanted sharding, bytes) of the non-constant operands
        self.live = tuple((v, w, node.nbytes[i]) for i, (v, w) in
                          enumerate(zip(node.operands, self.operands, strict=True))
                          if not node.constant[i])
        #: (operand number, wanted sharding) where the wanted sharding splits a dimension
        self.splits = tuple((v, w) for v, w, x in zip(node.operands, self.operands, s.operands,
                                                      strict=True) if x.split_dim is not None)


class Node:
    """One op of the graph: its operand and result numbers, strategies and memos."""

    __slots__ = ("op", "index", "operands", "results", "values", "constant", "is_constant", "live",
                 "nbytes", "choices", "by_results", "forward", "backward", "plans", "op_costs",
                 "readers")

    def __init__(self, graph: SearchGraph, op: Op, index: int,
                 strategies: list[Strategy]) -> None:
        self.op = op
        self.index = index
        self.is_constant = op.opdef is ops.constant
        self.operands = tuple(graph.number[id(v)] for v in op.operands)
        self.results = tuple(graph.number[id(r)] for r in op.results)
        self.values = self.operands + self.results
        self.constant = tuple(graph.constant[v] for v in self.operands)
        #: the non-constant operands' numbers
        self.live = tuple(v for v, c in zip(self.operands, self.constant, strict=True) if not c)
        self.nbytes = tuple(max(v.type.nbytes, 1) for v in op.operands)
        #: per operand, how many matrix ops (dot_general, convolution) of the graph read it
        self.readers = tuple(graph.matrix_readers.get(v, 0) for v in self.operands)
        self.choices = [Choice(graph, self, s) for s in strategies]
        self.by_results: dict[tuple[int, ...], list[int]] = {}
        for i, c in enumerate(self.choices):
            self.by_results.setdefault(c.results, []).append(i)
        self.forward: dict[tuple[int, ...], int | None] = {}
        self.backward: dict[tuple[int, ...], int | None] = {}
        self.plans: dict[tuple, tuple] = {}
        self.op_costs: dict[int, Cost] = {}  # by strategy index


class SearchGraph:
    """`fn` numbered for propagation and planning on `n` devices (see the module doc)."""

    def __init__(self, fn: Function, strategies_of: Callable[[Op], list[Strategy]],
                 n: int) -> None:
        self.fn = fn
        self.n = n
        self.shardings: list[Sharding] = []
        self._sharding_number: dict[Sharding, int] = {}
        self.intern(R)
        self.values: list[Value] = [*fn.params, *(r for op in fn.body for r in op.results)]
        self.number: dict[int, int] = {id(v): k for k, v in enumerate(self.values)}
        self.constant = [constant_value(v) is not None for v in self.values]
        self.params = list(range(len(fn.params)))
        self.live = [k for k, c in enumerate(self.constant) if not c]
        #: value number -> how many matrix ops read it (once per op)
        self.matrix_readers: dict[int, int] = {}
        for op in fn.body:
            if op.opdef in MATRIX_OPS:
                for k in {self.number[id(v)] for v in op.operands}:
                    self.matrix_readers[k] = self.matrix_readers.get(k, 0) + 1
        self.nodes = [Node(self, op, i, strategies_of(op)) for i, op in enumerate(fn.body)]
        #: the nodes of the ops that are not constants
        self.computing = [node for node in self.nodes if not node.is_constant]

    def intern(self, s: Sharding) -> int:
        """The number of sharding `s` (numbered on first sight)."""
        k = self._sharding_number.get(s)
        if k is None:
            k = self._sharding_number[s] = len(self.shardings)
            self.shardings.append(s)
        return k

    def to_list(self, found: Mapping[int, Sharding]) -> list[int]:
        """`found` (id(value) -> sharding, values of this function) as a list by number."""
        out = [UNKNOWN] * len(self.values)
        for key, s in found.items():
            out[self.number[key]] = self.intern(s)
        return out

    def to_dict(self, found: list[int]) -> dict[int, Sharding]:
        """A list by number as id(value) -> sharding, leaving out `UNKNOWN` values."""
        return {id(self.values[k]): self.shardings[s] for k, s in enumerate(found)
                if s != UNKNOWN}
