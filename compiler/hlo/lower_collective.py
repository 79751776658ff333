"""Collectives as the IR's placeholders (what to communicate, never how): all-reduce,
all-gather, reduce-scatter, all-to-all, collective-permute and their -start/-done forms.
Replica groups are kept, expanded from the list, iota or mesh form.

An HLO `-start` becomes the IR's `<kind>_start` (a u32[] context) and its `-done` the IR's
`<kind>_done`, where the HLO places it: the start's result stands for the done's until then
(a `Pending` value, known to `lowering.pending`). A start read by anything but a `-done` is
lowered as the synchronous collective, as is its done."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from nxcc.compiler.hlo import errors as E
from nxcc.compiler.hlo.context import InstrContext, Tree, leaves
from nxcc.compiler.hlo.lower_control import zeros
from nxcc.compiler.hlo.nodes import Shape
from nxcc.compiler.hlo.registry import converts
from nxcc.ir import ops
from nxcc.ir.core import Value
from nxcc.ir.opdef import OpDef
from nxcc.ir.ops.collective import ASYNC_PAIRS
from nxcc.ir.sharding_notation.hlo_sharding import ReplicaGroups

_REDUCTIONS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
               "and": "and", "or": "or"}


def reduction_kind(cx: InstrContext) -> str:
    """sum/prod/max/min/and/or: what the to_apply computation computes of its two params."""
    comp = cx.hlo_computation("to_apply")
    root = comp.root
    params = {i.name for i in comp.instructions if i.opcode == "parameter"}
    kind = _REDUCTIONS.get(root.opcode)
    if kind is None or len(params) != 2 or set(root.operands) != params:
        raise cx.error(f"expected a to_apply computation that applies one of add, multiply, "
                       f"maximum, minimum, and, or to its two parameters, found '{comp.name}' "
                       f"with root {root.opcode}", E.UNSUPPORTED_FEATURE)
    return kind


def groups(cx: InstrContext) -> tuple[tuple[int, ...], ...]:
    rg = cx.attr("replica_groups", None)
    if rg is None:
        return ()
    assert isinstance(rg, ReplicaGroups)
    return rg.groups


def _common(cx: InstrContext, gs: tuple[tuple[int, ...], ...]) -> dict[str, object]:
    return {"replica_groups": gs, "channel_id": cx.attr("channel_id", 0)}


Emit = Callable[[OpDef, Sequence[Value], dict], list[Value]]


@dataclass
class Pending:
    """A `<kind>_start` whose done is still to be emitted: the done's operands and attributes,
    the values standing for its results, and its results once emitted."""

    done: OpDef
    operands: list[Value]
    attrs: dict
    stand_ins: list[Value]
    results: list[Value] = field(default_factory=list)


def sync_emit(cx: InstrContext) -> Emit:
    return lambda op, xs, attrs: cx.emit(op, xs, attrs)


def async_emit(cx: InstrContext) -> Emit:
    """Emits `<kind>_start` for collective `op`; gives values standing for its done's results."""
    def emit(op: OpDef, xs: Sequence[Value], attrs: dict) -> list[Value]:
        start_def, done_def = ASYNC_PAIRS[op]
        context = cx.emit1(start_def, xs, attrs)
        checked = context.owner.attrs  # type: ignore[union-attr]
        types = op.infer([x.type for x in xs], checked, cx.b.module)
        pending = Pending(done_def, [context, *xs],
                          {k: v for k, v in checked.items() if k in done_def.attrs},
                          [Value(t) for t in types])
        for v in pending.stand_ins:
            cx.lowering.pending[id(v)] = pending
        return pending.stand_ins

    return emit


def _pack(results: list[Value], shape: Shape) -> Tree:
    return tuple(results) if shape.is_tuple else results[0]


def _dimension(cx: InstrContext) -> int:
    dims = cx.attr("dimensions")
    if len(dims) != 1:  # type: ignore[arg-type]
        raise cx.attr_error("dimensions", "expected one dimension")
    return dims[0]  # type: ignore[index]


def all_reduce(cx: InstrContext, out: Shape, emit: Emit | None = None) -> Tree:
    values = [v for a in cx.args for v in leaves(a)]
    results = (emit or sync_emit(cx))(ops.all_reduce, values, {"reduction": reduction_kind(cx),
                                             **_common(cx, groups(cx))})
    return _pack(results, out)


def all_gather(cx: InstrContext, out: Shape, emit: Emit | None = None) -> Tree:
    emit = emit or sync_emit(cx)
    dim = _dimension(cx)
    outs = out.elements if out.is_tuple else (out,)  # type: ignore[union-attr]
    results = []
    for x, o in zip(cx.values(), outs, strict=False):
        gs = groups(cx)
        if not gs:
            n = cx.ir_type(o).shape[dim] // max(x.type.shape[dim], 1)
            gs = (tuple(range(n)),)
        results.append(emit(ops.all_gather, [x], {"dimension": dim, **_common(cx, gs)})[0])
    return _pack(results, out)


def reduce_scatter(cx: InstrContext, out: Shape) -> Tree:
    dim = _dimension(cx)
    outs = out.elements if out.is_tuple else (out,)  # type: ignore[union-attr]
    kind = reduction_kind(cx)
    results = []
    for x, o in zip(cx.values(), outs, strict=False):
        gs = groups(cx)
        if not gs:
            n = x.type.shape[dim] // max(cx.ir_type(o).shape[dim], 1)
            gs = (tuple(range(n)),)
        results.append(cx.emit1(ops.reduce_scatter, [x], {"dimension": dim, "reduction": kind,
                                                        **_common(cx, gs)}))
    return _pack(results, out)


def tuple_all_to_all(cx: InstrContext, gs: tuple[tuple[int, ...], ...]) -> Tree:
    """The tuple form: k operands of one shape, operand j going to group member j; result i
    is what member i sent this rank. Lowered as the array form over the operands stacked
    along a new leading dimension, then unstacked."""
    xs = cx.values()
    if len({x.type for x in xs}) != 1 or any(len(g) != len(xs) for g in gs):
        raise cx.error(f"expected {len(xs)} operands of one shape, one per member of each "
                       f"replica group, on the tuple form of all-to-all",
                       E.UNSUPPORTED_FEATURE)
    shape = xs[0].type.shape
    rows = [cx.emit1(ops.reshape, [x], {"shape": (1, *shape)}) for x in xs]
    stacked = cx.emit1(ops.concatenate, rows, {"dimension": 0})
    moved = cx.emit1(ops.all_to_all, [stacked], {"split_dimension": 0, "concat_dimension": 0,
                                               **_common(cx, gs)})
    ones = (1,) * len(shape)
    return tuple(cx.emit1(ops.reshape, [cx.emit1(ops.slice, [moved], {
        "start_indices": (i, *(0,) * len(shape)), "limit_indices": (i + 1, *shape),
        "strides": (1, *ones)})], {"shape": shape}) for i in range(len(xs)))


def all_to_all(cx: InstrContext, out: Shape) -> Tree:
    gs = groups(cx)
    if not gs:
        raise cx.error("expected replica_groups on all-to-all (its group size is not in the "
                       "shapes)", E.UNSUPPORTED_FEATURE)
    if "dimensions" not in cx.instr.attrs:
        return tuple_all_to_all(cx, gs)
    dim = _dimension(cx)
    results = [cx.emit1(ops.all_to_all, [x], {"split_dimension": dim, "concat_dimension": dim,
                                            **_common(cx, gs)}) for x in cx.values()]
    return _pack(results, out)


def collective_permute(cx: InstrContext, out: Shape, emit: Emit | None = None) -> Tree:
    pairs = cx.attr_as("source_target_pairs", tuple)
    x = cx.value(0)
    return (emit or sync_emit(cx))(ops.collective_permute, [x], {
        "source_target_pairs": tuple(tuple(p) for p in pairs),
        "channel_id": cx.attr("channel_id", 0)})[0]


_KINDS = {"all-reduce": all_reduce, "all-gather": all_gather,
          "reduce-scatter": reduce_scatter, "all-to-all": all_to_all,
          "collective-permute": collective_permute}
#: the collectives with an asynchronous form (`-start`), which take how to emit the op
_STARTS: dict[str, Callable[[InstrContext, Shape, Emit | None], Tree]] = {
    "all-gather": all_gather, "collective-permute": collective_permute}


@converts(*_KINDS)
def lower_collective(cx: InstrContext) -> Tree:
    return _KINDS[cx.instr.opcode](cx, cx.instr.shape)


def _only_done_reads(cx: InstrContext) -> bool:
    """Whether every reader of this -start instruction is a -done (and it is not a root)."""
    instr = cx.instr
    for comp in cx.lowering.computations.values():
        if any(i is instr for i in comp.instructions):
            return not instr.root and all(
                i.opcode.endswith("-done") for i in comp.instructions
                if instr.name in i.operands)
    return False


def _emit_for_start(cx: InstrContext) -> Emit:
    return async_emit(cx) if _only_done_reads(cx) else sync_emit(cx)


@converts("all-reduce-start")
def lower_all_reduce_start(cx: InstrContext) -> Tree:
    return all_reduce(cx, cx.instr.shape, _emit_for_start(cx))


@converts("all-gather-start", "collective-permute-start")
def lower_start(cx: InstrContext) -> Tree:
    """An (operand, result, context...) tuple, or the result alone."""
    kind = _STARTS[cx.instr.opcode.removesuffix("-start")]
    shape = cx.instr.shape
    emit = _emit_for_start(cx)
    if not shape.is_tuple:
        return kind(cx, shape, emit)
    result = kind(cx, shape.elements[1], emit)  # type: ignore[union-attr]
    operand = cx.args[0] if len(cx.args) == 1 else tuple(cx.args)
    rest = shape.elements[2:]  # type: ignore[union-attr]
    return (operand, result, *(zeros(cx, s) for s in rest))


def _finish(cx: InstrContext, tree: Tree) -> Tree:
    """`tree` with each value standing for a pending done replaced by that done's result
    (the done emitted here, once)."""
    if isinstance(tree, tuple):
        return tuple(_finish(cx, t) for t in tree)
    pending = cx.lowering.pending.get(id(tree))
    if not isinstance(pending, Pending):
        return tree
    if not pending.results:
        pending.results = cx.emit(pending.done, pending.operands, pending.attrs)
    return pending.results[pending.stand_ins.index(tree)]  # type: ignore[arg-type]


@converts("all-reduce-done", "all-gather-done", "collective-permute-done")
def lower_done(cx: InstrContext) -> Tree:
    cx.operand_count(1)
    arg = cx.args[0]
    if cx.instr.opcode != "all-reduce-done" and isinstance(arg, tuple):
        arg = arg[1]
    return _finish(cx, arg)
