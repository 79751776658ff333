"""Lowering a module to the NEFF's executable program: slots, instructions, memory plan.

The program of one physical core is a JSON object::

    {"entry": "main",
     "functions": {NAME: {"slots": [...], "params": [slot...], "results": [slot...],
                          "arena_bytes": N, "binary_opcode": "add" | null,
                          "instructions": [{"op": ..., "args": [slot...],
                                            "outs": [slot...], "attrs": {...}}]}}}

A slot is where a value lives at run time: ``{"kind": "param", "index": i}``,
``{"kind": "buffer", "offset": o}`` in the function's arena, ``{"kind": "weight",
"name": "w3"}`` (a weight file), or ``{"kind": "splat", "value": v}``; each with "dtype"
(IR name) and "shape". Constant ops become weight or splat slots and no instruction, and so
does a reshape, slice or tp_copy the memory plan makes a view: a buffer slot at its place in its
operand's buffer, with ``"view_of": slot`` (written when that slot is) and, unless it is
C-contiguous, ``"strides": [bytes...]``. A concatenation planned in place is no instruction
either: its operands' slots are its slices (with their strides), written by the ops making
them or by a `copy` each, and its own slot is ``"view_of"`` the slice written last.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from nxcc.backend.program.attr_codec import encode_attr, encode_attrs
from nxcc.backend.program.memory_plan import MemoryPlan, plan_memory
from nxcc.backend.program.view_layout import view_sources
from nxcc.ir import ops
from nxcc.ir.attributes import Dense, attr_of
from nxcc.ir.core import Function, Module, Op
from nxcc.ir.interpreter import binary_op_of
from nxcc.ir.opdef import OpDef
from nxcc.ir.rewrite import reachable_functions


@dataclass
class WeightTable:
    """Weights by name, deduplicated by content."""

    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    by_digest: dict[str, str] = field(default_factory=dict)

    def store(self, d: Dense) -> str:
        arr = np.ascontiguousarray(d.array)
        hasher = hashlib.sha256(str(d.type).encode())
        hasher.update(arr.reshape(-1).view(np.uint8).data)  # hashed in place, not copied
        digest = hasher.hexdigest()
        name = self.by_digest.get(digest)
        if name is None:
            name = f"w{len(self.arrays)}"
            self.arrays[name] = arr
            self.by_digest[digest] = name
        return name

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())


def lower_module(module: Module, weights: WeightTable) -> dict:
    """The program JSON for `module` (storing its constants in `weights`)."""
    names = reachable_functions(module)
    return {
        "entry": module.entry,
        "functions": {n: lower_function(module, module.functions[n], weights) for n in names},
    }


def lower_function(module: Module, fn: Function, weights: WeightTable) -> dict:
    slots: list[dict] = []
    slot_of: dict[int, int] = {}

    def add_slot(value_id: int, entry: dict) -> int:
        slot_of[value_id] = len(slots)
        slots.append(entry)
        return slot_of[value_id]

    def typed(entry: dict, t) -> dict:
        return {**entry, "dtype": t.dtype.value, "shape": list(t.shape)}

    for i, p in enumerate(fn.params):
        add_slot(id(p), typed({"kind": "param", "index": i}, p.type))
    planned = {id(r) for op in fn.body if op.opdef is not ops.constant for r in op.results}
    plan = plan_memory(fn, planned)
    instructions: list[dict] = []
    written: dict[int, int] = {}  # slot -> the instruction writing it
    for op in fn.body:
        if op.opdef is ops.constant:
            d: Dense = attr_of(op.attrs, "value", Dense)
            if d.is_splat and d.type.size > 0:
                entry = {"kind": "splat", "value": encode_attr(_python_scalar(d), _no_weights)}
            else:
                entry = {"kind": "weight", "name": weights.store(d)}
            add_slot(id(op.result), typed(entry, d.type))
            continue
        if id(op.results[0]) in plan.views:  # a view of its operand's buffer (VIEW_OPS)
            view = _buffer(plan, id(op.result), view_of=slot_of[id(op.operands[0])])
            add_slot(id(op.result), typed(view, op.result.type))
            continue
        if id(op.results[0]) in plan.concats:  # its operands are written in their slices
            ready = _concat_in_place(op, plan, slots, slot_of, written, instructions)
            add_slot(id(op.result), typed(_buffer(plan, id(op.result), view_of=ready),
                                          op.result.type))
            continue
        outs = [add_slot(id(r), typed(_buffer(plan, id(r)), r.type)) for r in op.results]
        for o in outs:
            written[o] = len(instructions)
        instructions.append({
            "op": op.opcode,
            "args": [slot_of[id(v)] for v in op.operands],
            "outs": outs,
            "attrs": encode_attrs(op.attrs, weights.store),
        })
    return {
        "slots": slots,
        "params": [slot_of[id(p)] for p in fn.params],
        "results": [slot_of[id(r)] for r in fn.results],
        "arena_bytes": plan.arena_bytes,
        "binary_opcode": _name(binary_op_of(module, fn.name)),
        "instructions": instructions,
    }


def _buffer(plan: MemoryPlan, value: int, **extra: int) -> dict:
    """A buffer slot for planned value `value` (its strides when not C-contiguous)."""
    slot: dict = {"kind": "buffer", "offset": plan.offsets[value], **extra}
    if value in plan.strides:
        slot["strides"] = list(plan.strides[value])
    return slot


def _concat_in_place(op: Op, plan: MemoryPlan, slots: list[dict], slot_of: dict[int, int],
                     written: dict[int, int], instructions: list[dict]) -> int:
    """A `copy` instruction into its slice for each operand of concatenation `op` that no
    op wrote there (`MemoryPlan.concats`); the slot its value is complete after (the last
    written of its slices), for its slot's ``view_of``."""
    copied: list[int] = []
    for k, offset, strides in plan.concats[id(op.result)]:
        v = op.operands[k]
        region = {"kind": "buffer", "offset": offset, "dtype": v.type.dtype.value,
                  "shape": list(v.type.shape)}
        if strides is not None:
            region["strides"] = list(strides)
        slots.append(region)
        copied.append(len(slots) - 1)
        written[len(slots) - 1] = len(instructions)
        instructions.append({"op": ops.copy.name, "args": [slot_of[id(v)]],
                             "outs": [len(slots) - 1], "attrs": {}})
    parts = [slot_of[id(v)] for v in op.operands]
    return max([*parts, *copied], key=lambda slot: _ready(slots, written, slot))


def _ready(slots: list[dict], written: dict[int, int], slot: int) -> int:
    """The index of the instruction after which slot's value is complete (-1: none)."""
    for s in [slot, *view_sources(slots, slot)]:
        if s in written:
            return written[s]
    return -1


def _name(opdef: OpDef | None) -> str | None:
    return None if opdef is None else opdef.name


def _no_weights(d: Dense) -> str:
    raise AssertionError("a splat value is a scalar")


def _python_scalar(d: Dense) -> bool | int | float:
    v = d.splat_value
    if d.type.dtype.is_pred:
        return bool(v)
    return float(v) if d.type.dtype.is_float else int(v)
