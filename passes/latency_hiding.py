"""latency-hiding: split each all_reduce into a start and a done, as far apart as allowed.

XLA's latency-hiding scheduler in miniature, for the entry function: every all_reduce becomes
`all_reduce_start` (placed as soon as its operands exist) and `all_reduce_done` (placed just
before the first op that reads its results), so the compute between them overlaps the
communication, which the runtime runs on each rank's own communication thread
(`backend.runtime.async_comm`). Starts keep their order among themselves, so every rank still
begins its collectives in the same order. Functions called from the entry (loop bodies,
branches) are left as they are.

    %s = all_reduce(%g) {reduction = sum}      ->   %h = all_reduce_start(%g) {reduction = sum}
    ... independent compute ...                    ... independent compute ...
    %u = add(%s, %x)                               %s = all_reduce_done(%h, %g)
                                                   %u = add(%s, %x)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.rewrite import replace_uses
from nxcc.ir.types import TensorType

CONTEXT = TensorType(DType.U32, ())


@dataclass(frozen=True)
class LatencyHiding:
    """Splits the entry function's all_reduces into start/done pairs, scheduled apart."""

    name: ClassVar[str] = "latency-hiding"

    def run(self, module: Module) -> bool:
        return schedule(module.entry_function)


def split(op: Op) -> tuple[Op, Op]:
    """The start and done of all_reduce `op` (the done gives its results' values)."""
    start = Op(ops.all_reduce_start, op.operands, [CONTEXT],
               ops.all_reduce_start.check_attrs(op.attrs))
    done = Op(ops.all_reduce_done, [start.results[0], *op.operands],
              [r.type for r in op.results], {}, [r.name for r in op.results])
    return start, done


def schedule(fn: Function) -> bool:
    """Split and schedule `fn`'s all_reduces; whether anything changed."""
    if not any(op.opdef is ops.all_reduce for op in fn.body):
        return False
    others: list[Op] = []
    starts: deque[Op] = deque()
    done_of: dict[int, Op] = {}  # id of a done's result -> the done
    mapping: dict[Value, Value] = {}
    for op in fn.body:
        if op.opdef is not ops.all_reduce:
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
    for op in {id(d): d for d in done_of.values()}.values():
        op.operands = [by_id.get(id(v), v) for v in op.operands]
    for op in starts:
        op.operands = [by_id.get(id(v), v) for v in op.operands]
    body: list[Op] = []
    defined = {id(p) for p in fn.params}
    emitted: set[int] = set()

    def emit(op: Op) -> None:
        body.append(op)
        emitted.add(id(op))
        defined.update(id(r) for r in op.results)

    def emit_dones_for(values: list[Value]) -> None:
        for v in values:
            done = done_of.get(id(v))
            if done is not None and id(done) not in emitted:
                emit(done)

    def ready(start: Op) -> bool:
        return all(id(v) in defined or id(v) in done_of for v in start.operands)

    def emit_ready_starts() -> None:
        while starts and ready(starts[0]):
            start = starts.popleft()
            emit_dones_for(start.operands)
            emit(start)

    emit_ready_starts()
    for op in others:
        emit_dones_for(op.operands)
        emit(op)
        emit_ready_starts()
    while starts:  # a start waiting for a done no op reads: that done now, then the start
        if not ready(starts[0]):
            raise ValueError(f"latency-hiding: {starts[0].opcode} reads a value the function "
                             "never defines")
        emit_dones_for(starts[0].operands)
        emit_ready_starts()
    emit_dones_for(fn.results)
    for done in {id(d): d for d in done_of.values()}.values():
        if id(done) not in emitted:
            emit(done)
    fn.body = body
    return True
