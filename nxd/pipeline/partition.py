"""One pipeline stage's forward, cut out of a whole model's at its cut points.

A model built by `Model` is a list of ops in pieces: piece 0 is everything before the first
cut point, piece k everything between cut points k-1 and k, and the last piece everything
after the last one (with the loss). A stage holds a run of pieces [a, b). Its forward
(`cut_stage`) is the function

    stage(*params, x_in?, *data) -> x_out        (a stage before the last)
    stage(*params, x_in?, *data) -> (loss_sum, count)   (the last stage)

- `params`: the parameters its ops read, in declaration order (a parameter read by several
  stages is held by each of them: a shared weight such as a tied embedding);
- `x_in` (not on the first stage): every value built before piece a and read from piece a
  on, packed into one array (`handoff.pack`), in the order they were built; `x_out` the same
  at piece b. A value that must reach a later stage passes through;
- `data`: the data inputs its ops read, in declaration order.
Values computed from data inputs and constants alone (masks, position tables) never cross:
a stage that reads one rebuilds it. Only floating-point values cross (their gradients come
back); anything else is refused naming the value and the cut point.
"""

from __future__ import annotations

from dataclasses import dataclass

from nxcc.ir import ops
from nxcc.ir.builder import Builder
from nxcc.ir.clone import clone_function
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.types import TensorType
from nxcc.nxd.model import InputSpec, Model, ModelError
from nxcc.nxd.params import ParamSpec
from nxcc.nxd.pipeline.handoff import pack, packed_type, unpack

#: ops whose result may differ between calls or that need every rank: never rebuilt
_NOT_FREE = (ops.all_reduce, ops.all_gather, ops.reduce_scatter, ops.tp_copy,
             ops.all_to_all, ops.collective_permute)


@dataclass
class Pieces:
    """Where each op of a model's forward sits, and what is free (see the module
    docstring)."""

    model: Model
    piece: list[int]           # piece of each op
    defined: dict[int, int]    # value id -> piece that builds it (params, inputs: -1)
    free: set[int]             # value ids built from data inputs and constants alone
    count: int                 # number of pieces

    @staticmethod
    def of(m: Model) -> Pieces:
        piece, defined, free = [], {}, {id(v) for v in m.input_values}
        for v in m.fn.params:
            defined[id(v)] = -1
        k, marks = 0, [mk.position for mk in m.markers]
        for i, op in enumerate(m.fn.body):
            while k < len(marks) and marks[k] <= i:
                k += 1
            piece.append(k)
            for r in op.results:
                defined[id(r)] = k
            if op.opdef not in _NOT_FREE and all(id(v) in free for v in op.operands):
                free.update(id(r) for r in op.results)
        return Pieces(m, piece, defined, free, len(m.markers) + 1)

    def crossing(self, k: int) -> list[Value]:
        """The values built before piece k and read from piece k on (not free), in the
        order they were built."""
        if k <= 0 or k >= self.count:
            return []
        seen: dict[int, Value] = {}
        for i, op in enumerate(self.model.fn.body):
            if self.piece[i] < k:
                continue
            for v in op.operands:
                d = self.defined.get(id(v), -1)
                if 0 <= d < k and id(v) not in self.free:
                    seen.setdefault(id(v), v)
        order = {id(r): n for n, op in enumerate(self.model.fn.body) for r in op.results}
        return sorted(seen.values(), key=lambda v: (order[id(v)], v.index))

    def params_used(self, pieces: range) -> set[int]:
        """Ids of the parameter values the ops of `pieces` read."""
        params = {id(d.value) for d in self.model.declared}
        return {id(v) for i, op in enumerate(self.model.fn.body) if self.piece[i] in pieces
                for v in op.operands if id(v) in params}


@dataclass
class StageForward:
    """One stage's forward (see the module docstring) in a module of its own."""

    module: Module
    fn: Function
    specs: list[ParamSpec]
    params: list[Value]
    x_in: Value | None
    in_types: list[TensorType]
    data: list[InputSpec]
    outputs: list[Value]       # x_out's values (unpacked), or (loss_sum, count)
    x_out: Value | None
    segments: dict[str, list[list[Op]]]
    stops: list[Value]
    mapping: dict[int, Value]  # model value id -> the stage's value


def held_specs(m: Model, pieces: range) -> list[ParamSpec]:
    """The parameters a stage holding `pieces` of `m` takes, in its programs' order."""
    used = Pieces.of(m).params_used(pieces)
    return [d.spec for d in m.declared if id(d.value) in used]


def _check_crossing(values: list[Value], m: Model, k: int) -> None:
    for v in values:
        if not v.type.dtype.is_float:
            where = m.markers[k - 1].name
            raise ModelError(f"value {v.name or '%?'} ({v.type}) crosses the pipeline cut "
                             f"after {where}: only floating-point activations may cross "
                             "(compute it after the cut, or from the data inputs alone)")


def _needed(p: Pieces, pieces: range) -> list[int]:
    """Indices of the ops a stage holding `pieces` runs: its own and the free ones they
    read (rebuilt)."""
    body = p.model.fn.body
    want: set[int] = set()
    index = {id(r): i for i, op in enumerate(body) for r in op.results}
    for i in range(len(body) - 1, -1, -1):
        if p.piece[i] in pieces:
            want.add(i)
        elif i not in want:
            continue
        for v in body[i].operands:
            j = index.get(id(v))
            if j is not None and p.piece[j] not in pieces and id(v) in p.free:
                want.add(j)
    return sorted(want)


def _module_for(m: Model, pieces: range) -> Module:
    """A new module holding copies of the computations `m`'s forward calls."""
    module = Module(f"{m.name}.pieces{pieces.start}to{pieces.stop}")
    for fname, f in m.module.functions.items():
        if fname != "forward":
            module.add_function(clone_function(f))
    return module


def _copy_ops(m: Model, keep: list[int], fn: Function, mapping: dict[int, Value]
              ) -> dict[int, Op]:
    """Copies of forward ops `keep` appended to `fn` (operands through `mapping`, which
    learns their results); the copy of each by index."""
    copies: dict[int, Op] = {}
    for i in keep:
        op = m.fn.body[i]
        new = Op(op.opdef, [mapping[id(v)] for v in op.operands],
                 [r.type for r in op.results], op.attrs, [r.name for r in op.results])
        for old, r in zip(op.results, new.results, strict=True):
            mapping[id(old)] = r
        fn.body.append(new)
        copies[i] = new
    return copies


def _segments_in(m: Model, p: Pieces, pieces: range, copies: dict[int, Op]
                 ) -> dict[str, list[list[Op]]]:
    """The recomputation segments' ops a stage holds, by granularity."""
    out: dict[str, list[list[Op]]] = {}
    for seg in m.segments:
        mine = [copies[i] for i in range(seg.start, seg.stop)
                if i in copies and p.piece[i] in pieces]
        if mine:
            out.setdefault(seg.granularity, []).append(mine)
    return out


def cut_stage(m: Model, loss: tuple[Value, Value], pieces: range, name: str = "stage"
              ) -> StageForward:
    """The forward of the stage holding `pieces` of model `m`, whose loss is `loss`."""
    p = Pieces.of(m)
    if not (0 <= pieces.start < pieces.stop <= p.count):
        raise ModelError(f"pieces {pieces.start}..{pieces.stop - 1} are not within the "
                         f"model's {p.count}")
    last = pieces.stop == p.count
    ins = p.crossing(pieces.start)
    outs = list(loss) if last else p.crossing(pieces.stop)
    _check_crossing(ins, m, pieces.start)
    if not last:
        _check_crossing(outs, m, pieces.stop)
    keep = _needed(p, pieces)
    used = {id(v) for i in keep for v in m.fn.body[i].operands}
    mapping: dict[int, Value] = {}

    def take(v: Value) -> Value:
        mapping[id(v)] = Value(v.type, v.name)
        return mapping[id(v)]

    held = [d for d in m.declared if id(d.value) in used]
    params = [take(d.value) for d in held]
    data = [(spec, take(v)) for spec, v in zip(m.inputs, m.input_values, strict=True)
            if id(v) in used]
    x_in = Value(packed_type([v.type for v in ins]), "x_in") if ins else None
    fn = Function(name, [*params, *([x_in] if x_in else []), *(v for _, v in data)])
    module = _module_for(m, pieces)
    module.add_function(fn)
    b = Builder(module, fn)
    if x_in is not None:
        for v, u in zip(ins, unpack(b, x_in, [v.type for v in ins]), strict=True):
            mapping[id(v)] = u
    copies = _copy_ops(m, keep, fn, mapping)
    if any(id(v) not in mapping for v in outs):
        raise ModelError("the loss must be built after the model's last cut point")
    mapped_outs = [mapping[id(v)] for v in outs]
    x_out = None if last else pack(b, mapped_outs)
    stops = [mapping[id(v)] for v in m.stops if id(v) in mapping]
    return StageForward(module, fn, [d.spec for d in held], params, x_in,
                        [v.type for v in ins], [spec for spec, _ in data], mapped_outs, x_out,
                        _segments_in(m, p, pieces, copies), stops, mapping)
