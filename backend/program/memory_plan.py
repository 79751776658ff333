"""Memory planning: every intermediate value gets an offset in one arena per function.

Values live from the op that defines them to their last use (returned values to the end).
Offsets are chosen first-fit over the free space, aligned to `ALIGNMENT`. An op's results
are placed before the operands it last uses are freed, so outputs never overlap inputs.

A `reshape` or a `slice` of a planned value is a view: its result gets an offset in its
operand's buffer, and byte strides there when it is not C-contiguous (`strides`), and no
instruction (`views`); the shared buffer lives until the last use of any of its views. A
reshape is a view when numpy could read its operand's layout reshaped in place (always, of
a C-contiguous operand); a slice always is (positive strides): GPT-2's query, key and value
slices of the fused projection are then read where the projection wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.backend.program.view_layout import Layout, contiguous_strides, reshaped, sliced
from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints
from nxcc.ir.core import Function, Module, Op, Value

ALIGNMENT = 64


@dataclass(frozen=True)
class MemoryPlan:
    """`offsets[id(value)]` for each planned value; `arena_bytes` is the peak footprint."""

    offsets: dict[int, int]
    arena_bytes: int
    views: frozenset[int] = frozenset()
    strides: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Byte strides of the views that are not C-contiguous, by id."""


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
    root, layout = _views(fn, planned)
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
    strides: dict[int, tuple[int, ...]] = {}
    for index, op in enumerate(fn.body):
        for r in op.results:
            if id(r) in root:
                delta, view_strides = layout[id(r)]
                offsets[id(r)] = offsets[root[id(r)]] + delta
                if view_strides != contiguous_strides(r.type.shape, r.type.dtype.itemsize):
                    strides[id(r)] = view_strides
            elif id(r) in planned:
                offsets[id(r)] = heap.allocate(r.type.nbytes)
        for v in free_at.get(index, []):
            heap.free(offsets[id(v)])
    return MemoryPlan(offsets, heap.peak, frozenset(root), strides)


def _views(fn: Function, planned: set[int]) -> tuple[dict[int, int], dict[int, Layout]]:
    """(root, layout): for each reshape or slice result that views its planned operand's
    buffer, the id of the value owning that buffer and the view's place in it."""
    root: dict[int, int] = {}
    layout: dict[int, Layout] = {}
    for op in fn.body:
        if op.opdef not in (ops.reshape, ops.slice) or not op.results:
            continue
        source, result = op.operands[0], op.result
        if id(source) not in planned or id(result) not in planned or result.type.size == 0:
            continue
        found = _view_layout(op, layout.get(id(source)))
        if found is not None:
            root[id(result)] = root.get(id(source), id(source))
            layout[id(result)] = found
    return root, layout


def _view_layout(op: Op, source: Layout | None) -> Layout | None:
    """The layout of `op`'s result (a reshape or slice) in its root buffer, given its
    operand's (None: the operand owns a C-contiguous buffer), or None if it is not a view."""
    x = op.operands[0]
    if x.type.size == 0:
        return None
    if source is None:
        source = (0, contiguous_strides(x.type.shape, x.type.dtype.itemsize))
    if op.opdef is ops.reshape:
        return reshaped(source, x.type.shape, op.result.type.shape)
    steps = attr_ints(op.attrs, "strides") if op.attrs.get("strides") else (1,) * x.type.rank
    if any(k < 1 for k in steps):
        return None
    return sliced(source, attr_ints(op.attrs, "start_indices"), steps)


def peak_activation_bytes(module: Module, fn: str) -> int:
    """The peak arena bytes of the intermediate values of function `fn` of `module`, planned
    as the NEFF lowering plans them (first fit, each value from its definition to its last
    use): the activations and temporaries of a training program. Parameters and constants
    (inputs and weights) and the returned values (a training program's gradients, kept in
    buffers of their own by whoever runs it) are not counted."""
    function = module.functions[fn]
    returned = {id(v) for v in function.results}
    planned = {id(r) for op in function.body if op.opdef is not ops.constant for r in op.results
               if id(r) not in returned}
    return plan_memory(function, planned).arena_bytes
