"""latency-hiding: split each collective into a start and a done, as far apart as allowed.

XLA's latency-hiding scheduler in miniature, for the entry function: every collective with an
asynchronous form (all_reduce, all_gather, reduce_scatter, all_to_all, collective_permute:
`ASYNC_PAIRS`) becomes `<kind>_start` (placed as soon as its operands exist) and
`<kind>_done` (placed just before the first op that reads its results), so the compute
between them overlaps the
communication, which the runtime runs on each rank's own communication thread
(`backend.runtime.async_comm`). Starts keep their order among themselves, so every rank still
begins its collectives in the same order. Start/done pairs already in the function (from
HLO's `-start`/`-done`) are scheduled the same way. Functions called from the entry (loop bodies,
branches) are left as they are.

    %s = all_reduce(%g) {reduction = sum}      ->   %h = all_reduce_start(%g) {reduction = sum}
    ... independent compute ...                    ... independent compute ...
    %u = add(%s, %x)                               %s = all_reduce_done(%h, %g)
                                                   %u = add(%s, %x)

A done takes the start's context and the collective's operands (their types, and, but for
all_reduce_done, the collective's attributes, give its results' types).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.ops.collective import ASYNC_PAIRS
from nxcc.ir.rewrite import replace_uses
from nxcc.ir.types import TensorType

CONTEXT = TensorType(DType.U32, ())
STARTS = frozenset(start for start, _ in ASYNC_PAIRS.values())
DONES = frozenset(done for _, done in ASYNC_PAIRS.values())


@dataclass(frozen=True)
class LatencyHiding:
    """Splits the entry function's collectives into start/done pairs, scheduled apart."""

    name: ClassVar[str] = "latency-hiding"

    def run(self, module: Module) -> bool:
        return schedule(module.entry_function)


def splits(op: Op) -> bool:
    """Whether `op` is a collective with a start/done form."""
    return op.opdef in ASYNC_PAIRS


def split(op: Op) -> tuple[Op, Op]:
    """The start and done of collective `op` (the done gives its results' values)."""
    start_def, done_def = ASYNC_PAIRS[op.opdef]
    start = Op(start_def, op.operands, [CONTEXT], start_def.check_attrs(op.attrs))
    done_attrs = done_def.check_attrs({k: v for k, v in op.attrs.items() if k in done_def.attrs})
    done = Op(done_def, [start.results[0], *op.operands],
              [r.type for r in op.results], done_attrs, [r.name for r in op.results])
    return start, done


def schedule(fn: Function) -> bool:
    """Split and schedule `fn`'s collectives; whether anything changed."""
    if not any(splits(op) or op.opdef in STARTS for op in fn.body):
        return False
    before = [id(op) for op in fn.body]
    starts, dones = split_all(fn)
    fn.body = _Schedule(fn, dones).order(fn.body, starts)
    return [id(op) for op in fn.body] != before


def split_all(fn: Function) -> tuple[deque[Op], dict[int, Op]]:
    """Take `fn`'s collectives out of its body as start/done pairs, every use of their
    results now reading the dones' (pairs already split are taken out as they are); the
    starts in order, each done by its results' ids."""
    others: list[Op] = []
    starts: deque[Op] = deque()
    done_of: dict[int, Op] = {}
    mapping: dict[Value, Value] = {}
    for op in fn.body:
        if op.opdef in STARTS:
            starts.append(op)
            continue
        if op.opdef in DONES:
            done_of.update((id(r), op) for r in op.results)
            continue
        if not splits(op):
            others.append(op)
            continue
        start, done = split(op)
        starts.append(start)
        for old, new in zip(op.results, done.results, strict=True):
            mapping[old] = new
            done_of[id(new)] = done
    fn.body = others
    replace_uses(fn, mapping)
    by_id = {id(k): v for k, v in mapping.items()}
    for op in [*starts, *{id(d): d for d in done_of.values()}.values()]:
        op.operands = [by_id.get(id(v), v) for v in op.operands]
    return starts, done_of


class _Schedule:
    """The new body: each start as soon as its operands exist (starts in order), each done
    just before the first op reading its results."""

    def __init__(self, fn: Function, done_of: dict[int, Op]) -> None:
        self.fn = fn
        self.done_of = done_of
        self.body: list[Op] = []
        self.defined = {id(p) for p in fn.params}
        self.emitted: set[int] = set()

    def emit(self, op: Op) -> None:
        self.body.append(op)
        self.emitted.add(id(op))
        self.defined.update(id(r) for r in op.results)

    def dones_for(self, values: list[Value]) -> None:
        for v in values:
            done = self.done_of.get(id(v))
            if done is not None and id(done) not in self.emitted:
                self.emit(done)

    def ready(self, start: Op) -> bool:
        return all(id(v) in self.defined or id(v) in self.done_of for v in start.operands)

    def ready_starts(self, starts: deque[Op]) -> None:
        while starts and self.ready(starts[0]):
            start = starts.popleft()
            self.dones_for(start.operands)
            self.emit(start)

    def order(self, others: list[Op], starts: deque[Op]) -> list[Op]:
        self.ready_starts(starts)
        for op in others:
            self.dones_for(op.operands)
            self.emit(op)
            self.ready_starts(starts)
        if starts:
            raise ValueError(f"latency-hiding: {starts[0].opcode} reads a value the function "
                             "never defines")
        self.dones_for(self.fn.results)
        for done in {id(d): d for d in self.done_of.values()}.values():
            if id(done) not in self.emitted:
                self.emit(done)
        return self.body
