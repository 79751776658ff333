"""Memory planning: every intermediate value gets an offset in one arena per function.

Values live from the op that defines them to their last use (returned values to the end).
Offsets are chosen first-fit over the free space, aligned to `ALIGNMENT`. An op's results
are placed before the operands it last uses are freed, so outputs never overlap inputs.

A `reshape` of a planned value is a view: its result gets its operand's offset (row-major
order is kept, so the bytes are the same) and no instruction (`views`); the shared buffer
lives until the last use of any of its views.
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.ir.core import Function, Module, Value

ALIGNMENT = 64


@dataclass(frozen=True)
class MemoryPlan:
    """`offsets[id(value)]` for each planned value; `arena_bytes` is the peak footprint."""

    offsets: dict[int, int]
    arena_bytes: int
    views: frozenset[int] = frozenset()


def _align(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


class _FreeList:
    """Sorted disjoint allocated intervals; first-fit allocation."""

    def __init__(self) -> None:
        self.used: list[tuple[int, int]] = []  # (offset, size), sorted by offset
        self.peak = 0

    def allocate(self, size: int) -> int:
        size = max(_align(size), ALIGNMENT)
        cursor = 0
        for i, (off, sz) in enumerate(self.used):
            if off - cursor >= size:
                self.used.insert(i, (cursor, size))
                return cursor
            cursor = max(cursor, off + sz)
        self.used.append((cursor, size))
        self.peak = max(self.peak, cursor + size)
        return cursor

    def free(self, offset: int) -> None:
        for i, (off, _) in enumerate(self.used):
            if off == offset:
                del self.used[i]
                return
        raise AssertionError(f"free of unallocated offset {offset}")


def plan_memory(fn: Function, planned: set[int]) -> MemoryPlan:
    """Offsets for the values of `fn` whose ids are in `planned` (op results needing a
    buffer; constants and parameters are not planned)."""
    root: dict[int, int] = {}  # a view's id -> the id of the value owning its buffer
    for op in fn.body:
        if op.opcode == "reshape" and id(op.operands[0]) in planned and id(op.result) in planned:
            source = id(op.operands[0])
            root[id(op.result)] = root.get(source, source)
    last_use: dict[int, int] = {}
    for index, op in enumerate(fn.body):
        for v in op.operands:
            last_use[root.get(id(v), id(v))] = index
    end = len(fn.body)
    for v in fn.results:
        last_use[root.get(id(v), id(v))] = end
    free_at: dict[int, list[Value]] = {}
    for op_index, op in enumerate(fn.body):
        for r in op.results:
            if id(r) in planned and id(r) not in root:
                free_at.setdefault(last_use.get(id(r), op_index), []).append(r)
    heap = _FreeList()
    offsets: dict[int, int] = {}
    for index, op in enumerate(fn.body):
        for r in op.results:
            if id(r) in root:
                offsets[id(r)] = offsets[root[id(r)]]
            elif id(r) in planned:
                offsets[id(r)] = heap.allocate(r.type.nbytes)
        for v in free_at.get(index, []):
            heap.free(offsets[id(v)])
    return MemoryPlan(offsets, heap.peak, frozenset(root))


def peak_activation_bytes(module: Module, fn: str) -> int:
    """The peak arena bytes of the intermediate values of function `fn` of `module`, planned
    as the NEFF lowering plans them (first fit, each value from its definition to its last
    use): the activations and temporaries of a training program. Parameters and constants
    (inputs and weights) and the returned values (a training program's gradients, kept in
    buffers of their own by whoever runs it) are not counted."""
    function = module.functions[fn]
    returned = {id(v) for v in function.results}
    planned = {id(r) for op in function.body if op.opcode != "constant" for r in op.results
               if id(r) not in returned}
    return plan_memory(function, planned).arena_bytes
