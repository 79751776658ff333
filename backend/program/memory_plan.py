"""Memory planning: every intermediate value gets an offset in one arena per function.

Values live from the op that defines them to their last use (returned values to the end).
Offsets are chosen first-fit over the free space, aligned to `ALIGNMENT`. An op's results
are placed before the operands it last uses are freed, so outputs never overlap inputs.

A `reshape` or a `slice` of a planned value is a view: its result gets an offset in its
operand's buffer, and byte strides there when it is not C-contiguous (`strides`), and no
instruction (`views`); the shared buffer lives until the last use of any of its views. A
reshape is a view when numpy could read its operand's layout reshaped in place (always, of
a C-contiguous operand); a slice always is (positive strides): GPT-2's query, key and value
slices of the fused projection are then read where the projection wrote them. A `tp_copy`
(the identity that marks where a tensor-parallel region begins) is a view of its whole
operand: no copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nxcc.backend.program.concat_parts import ConcatPlan, plan_concats
from nxcc.backend.program.view_layout import (
    Layout,
    contiguous_strides,
    is_contiguous,
    reshaped,
    sliced,
)
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
    """The reshapes and slices that are views (no instruction)."""
    strides: dict[int, tuple[int, ...]] = field(default_factory=dict)
    """Byte strides of the values that are not C-contiguous (views, concatenation parts)."""
    concats: dict[int, list[tuple[int, int, tuple[int, ...] | None]]] = field(
        default_factory=dict)
    """id of a concatenation planned in place (no instruction) -> (operand index, byte
    offset, byte strides or None when C-contiguous) of each operand copied into its slice;
    its other operands are written there by the ops making them (`concat_parts`)."""


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
    buffer; constants and parameters are not planned). A buffer holding views is allocated
    when the first of them, or itself, is defined (a concatenation's parts come first)."""
    concat = plan_concats(fn, planned)
    root, layout = dict(concat.root), dict(concat.layout)
    views = _views(fn, planned, root, layout)
    sizes = {id(r): r.type.nbytes for op in fn.body for r in op.results}
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
                top = root[id(r)]
                if top not in offsets:
                    offsets[top] = heap.allocate(sizes[top])
                delta, view_strides = layout[id(r)]
                offsets[id(r)] = offsets[top] + delta
                if not is_contiguous(r.type.shape, view_strides, r.type.dtype.itemsize):
                    strides[id(r)] = view_strides
            elif id(r) in planned and id(r) not in offsets:
                offsets[id(r)] = heap.allocate(r.type.nbytes)
        for v in free_at.get(index, []):
            heap.free(offsets[id(v)])
    return MemoryPlan(offsets, heap.peak, views, strides, _copies(fn, concat, offsets))


def _copies(fn: Function, concat: ConcatPlan, offsets: dict[int, int]
            ) -> dict[int, list[tuple[int, int, tuple[int, ...] | None]]]:
    """`MemoryPlan.concats`: the copied operands' slices at their offsets in the arena."""
    operands = {id(op.results[0]): op.operands for op in fn.body
                if op.opdef is ops.concatenate and id(op.results[0]) in concat.copies}
    found = {}
    for c, parts in concat.copies.items():
        base = offsets[concat.root.get(c, c)]
        rows = []
        for k, (delta, st) in parts:
            t = operands[c][k].type
            rows.append((k, base + delta,
                         None if is_contiguous(t.shape, st, t.dtype.itemsize) else st))
        found[c] = rows
    return found


#: ops whose result may be a view of their (first) operand's buffer
VIEW_OPS = (ops.reshape, ops.slice, ops.tp_copy)


def _views(fn: Function, planned: set[int], root: dict[int, int],
           layout: dict[int, Layout]) -> frozenset[int]:
    """The results of `VIEW_OPS` that view their planned operand's buffer, added to `root`
    (id of the value owning that buffer) and `layout` (the view's place in it)."""
    views = set()
    for op in fn.body:
        if op.opdef not in VIEW_OPS or not op.results:
            continue
        source, result = op.operands[0], op.result
        if (id(source) not in planned or id(result) not in planned or result.type.size == 0
                or id(result) in root):  # a concatenation's part, written in its slice
            continue
        found = _view_layout(op, layout.get(id(source)))
        if found is not None:
            root[id(result)] = root.get(id(source), id(source))
            layout[id(result)] = found
            views.add(id(result))
    return frozenset(views)


def _view_layout(op: Op, source: Layout | None) -> Layout | None:
    """The layout of `op`'s result (one of `VIEW_OPS`) in its root buffer, given its
    operand's (None: the operand owns a C-contiguous buffer), or None if it is not a view."""
    x = op.operands[0]
    if x.type.size == 0:
        return None
    if source is None:
        source = (0, contiguous_strides(x.type.shape, x.type.dtype.itemsize))
    if op.opdef is ops.tp_copy:
        return source
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
