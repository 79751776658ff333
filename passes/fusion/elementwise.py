"""fuse: group chains of elementwise ops into `fused_elementwise` ops.

A group has a root (an elementwise op) and every elementwise producer of the same result
shape all of whose users are in the group, found walking back from the root; the values
the group reads are its operands. A `broadcast_in_dim` that only inserts dimensions (its
`broadcast_dimensions` increasing) is read through: its operand becomes the group's operand,
broadcast at use, and the full-size broadcast is never made. A value used outside the group
(by another op or as a function result) is computed by the group that produces it and read
by the others, never computed twice. Ops with side effects are never fused, nor the ops of
scalar computations (reducers, comparators), which kernels call on arrays of any shape. A
group of one op without a broadcast to absorb is left as it is.

The kernel (`ir/kernels/fused.py`) evaluates a group block by block in place, with the ops'
own numerics, so fusion changes no result; the one rewrite is `power(x, 2 or 3)` of floats
narrower than f64, computed as float64 products rounded once (`_small_power`).
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import ClassVar

from nxcc.ir import ops
from nxcc.ir.attributes import attr_ints, attr_of
from nxcc.ir.core import Function, Module, Op, Value
from nxcc.ir.dtypes import DType
from nxcc.ir.fused_program import format_program
from nxcc.ir.patterns import apply_patterns
from nxcc.ir.rewrite import constant_value
from nxcc.passes.dead_code_elimination import DeadCodeElimination
from nxcc.passes.fusion.normalize import FuseLayerNorm, FuseSoftmax


@dataclass(frozen=True)
class FuseElementwise:
    """Replaces softmax and layer norm chains by their fused row ops (`normalize`), then
    each group of elementwise ops by one `fused_elementwise` op."""

    name: ClassVar[str] = "fuse"

    def run(self, module: Module) -> bool:
        changed = apply_patterns(module, [FuseSoftmax(module), FuseLayerNorm(module)])
        if changed:
            DeadCodeElimination().run(module)
        for fn in module.functions.values():
            if not scalar_computation(fn):
                changed |= fuse_function(fn)
        if changed:
            DeadCodeElimination().run(module)
        return changed


def scalar_computation(fn: Function) -> bool:
    """A function of scalars only (a reducer, a comparator): kernels apply it elementwise
    to whole arrays of other shapes, which a fused op's fixed shape would not allow."""
    return all(v.type.rank == 0 for v in (*fn.params, *fn.results))


def read_through(op: Op | None, shape: tuple[int, ...]) -> tuple[Value, tuple[int, ...]] | None:
    """(operand, dims) when `op` is a broadcast_in_dim to `shape` that a group can read as a
    view of its operand; None otherwise."""
    if op is None or op.opcode != ops.broadcast_in_dim.name or op.result.type.shape != shape:
        return None
    dims = attr_ints(op.attrs, "broadcast_dimensions")
    if any(b <= a for a, b in zip(dims, dims[1:], strict=False)):
        return None
    return op.operands[0], dims


@dataclass
class Group:
    """The ops of one group (root last once sorted) and its operands with their dims."""

    root: Op
    members: dict[int, Op] = field(default_factory=dict)
    leaves: list[tuple[Value, tuple[int, ...]]] = field(default_factory=list)
    broadcasts: int = 0
    #: (id of a leaf's value, its dims) -> its index in `leaves`
    leaf_index: dict[tuple[int, tuple[int, ...]], int] = field(default_factory=dict)


def fuse_function(fn: Function) -> bool:
    """Fuse the groups of `fn` in place; True if any was made."""
    position = {id(op): i for i, op in enumerate(fn.body)}
    uses: dict[int, int] = {}  # id of a value -> how many operands read it
    for op in fn.body:
        for v in op.operands:
            uses[id(v)] = uses.get(id(v), 0) + 1
    outside = {id(v) for v in fn.results}  # function results: used outside
    taken: set[int] = set()
    groups: list[Group] = []
    for op in reversed(fn.body):
        if id(op) in taken or not fusible(op):
            continue
        group = _grow(op, position, uses, outside, taken)
        if len(group.members) + group.broadcasts >= 2:
            groups.append(group)
            taken.update(group.members)
    if not groups:
        return False
    _rewrite(fn, groups, position)
    return True


def fusible(op: Op) -> bool:
    """An elementwise op of one result, without side effects."""
    opdef = op.opdef
    return opdef.elementwise and not opdef.side_effects and len(op.results) == 1


def _grow(root: Op, position: dict[int, int], uses: dict[int, int], outside: set[int],
          taken: set[int]) -> Group:
    """The largest group rooted at `root`: producers are visited latest first, so when one
    is reached every user of it inside the group has already joined, and its operand reads
    from members (counted in `inside`) tell whether all its uses are in the group."""
    shape = root.result.type.shape
    group = Group(root, {id(root): root})
    heap: list[tuple[int, int, Op]] = []
    inside: dict[int, int] = {}  # id of a value -> operands of members reading it

    def push(op: Op) -> None:
        for v in op.operands:
            p = v.owner
            if p is None:
                continue
            count = inside.get(id(v))
            inside[id(v)] = 1 if count is None else count + 1
            if count is None and len(p.results) == 1:  # the first read: visit its owner
                heapq.heappush(heap, (-position[id(p)], id(p), p))

    push(root)
    while heap:
        _, _, p = heapq.heappop(heap)
        value = p.results[0]
        if (id(p) not in taken and fusible(p)
                and value.type.shape == shape and id(value) not in outside
                and inside[id(value)] == uses[id(value)]):
            group.members[id(p)] = p
            push(p)
    group.broadcasts = sum(
        1 for op in group.members.values() for v in op.operands
        if (v.owner is None or id(v.owner) not in group.members)
        and read_through(v.owner, shape) is not None)
    return group


def _operand_ref(v: Value, group: Group, index: dict[int, int],
                 shape: tuple[int, ...]) -> tuple[bool, int]:
    """(is an operand, its index): a member's step, or a leaf of the group (added)."""
    if v.owner is not None and id(v.owner) in group.members:
        return False, index[id(v.owner)]
    through = read_through(v.owner, shape)
    leaf = through if through is not None else (v, tuple(range(v.type.rank)))
    key = (id(leaf[0]), leaf[1])
    k = group.leaf_index.get(key)
    if k is None:  # a dict, not a scan of the leaves: a group of n ops has up to 2n leaves
        k = group.leaf_index[key] = len(group.leaves)
        group.leaves.append(leaf)
    return True, k


def _small_power(op: Op) -> int:
    """2 or 3 when `op` is power(x, constant 2 or 3) of a float narrower than f64: then x^n
    is computed as products in float64 (x^2 is exact there, x^3 rounded once, as the power
    kernel's float64 pow is) and rounded once to x's type, at a fraction of pow's cost.
    0 otherwise."""
    if op.opcode != ops.power.name or not op.result.type.dtype.is_float:
        return 0
    if op.result.type.dtype.itemsize >= 8:
        return 0
    d = constant_value(op.operands[1])
    if d is None or not d.is_splat or float(d.splat_value) not in (2.0, 3.0):
        return 0
    return int(float(d.splat_value))


def fused_op(group: Group, position: dict[int, int]) -> Op:
    """The `fused_elementwise` op computing `group` (placed nowhere)."""
    members = sorted(group.members.values(), key=lambda op: position[id(op)])
    shape = group.root.result.type.shape
    index: dict[int, int] = {}
    steps: list[tuple[str, str, list[tuple[bool, int]]]] = []
    for op in members:
        power = _small_power(op)
        if power:
            base = _operand_ref(op.operands[0], group, index, shape)
            steps.append((ops.convert.name, DType.F64.value, [base]))
            wide = (False, len(steps) - 1)
            steps.append((ops.multiply.name, "", [wide, wide]))
            if power == 3:
                steps.append((ops.multiply.name, "", [(False, len(steps) - 1), wide]))
            steps.append((ops.convert.name, op.result.type.dtype.value,
                          [(False, len(steps) - 1)]))
            index[id(op)] = len(steps) - 1
            continue
        args = [_operand_ref(v, group, index, shape) for v in op.operands]
        qualifier = ""
        if op.opcode == ops.compare.name:
            qualifier = str(op.attrs["direction"])
        elif op.opcode == ops.convert.name:
            qualifier = attr_of(op.attrs, "dtype", DType).value
        steps.append((op.opcode, qualifier, args))
        index[id(op)] = len(steps) - 1
    program = format_program([d for _, d in group.leaves], steps)
    fused = Op(ops.fused_elementwise, [v for v, _ in group.leaves], [group.root.result.type],
               {"program": program, "shape": shape}, [group.root.result.name])
    fused.result.sharding = group.root.result.sharding
    return fused


def _rewrite(fn: Function, groups: list[Group], position: dict[int, int]) -> None:
    """Put each group's fused op at its root's place; drop the other members."""
    fused = {id(g.root): fused_op(g, position) for g in groups}
    dropped = {i for g in groups for i in g.members if i != id(g.root)}
    replaced = {id(g.root.result): fused[id(g.root)].result for g in groups}
    body = []
    for op in fn.body:
        if id(op) in dropped:
            continue
        new = fused.get(id(op), op)
        new.operands = [replaced.get(id(v), v) for v in new.operands]
        body.append(new)
    fn.body = body
    fn.results = [replaced.get(id(v), v) for v in fn.results]
