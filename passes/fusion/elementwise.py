"""fuse: group chains of elementwise ops into `fused_elementwise` ops.

A group has a root (an elementwise op) and every elementwise producer of the same result
shape all of whose users are in the group, found walking back from the root; the values
the group reads are its operands. A `broadcast_in_dim` that only inserts dimensions (its
`broadcast_dimensions` increasing) is read through: its operand becomes the group's operand,
broadcast at use, and the full-size broadcast is never made. A value used outside the group
(by another op or as a function result) is computed by the group that produces it and read
by the others, with one exception: a cheap producer (an elementwise op that is not
transcendental, `cheap`) whose users are all elementwise ops, and which with the cheap
producers before it reads at most one full-size array (splat constants and read-through
broadcasts cost nothing), is computed again inside each group that reads it (`_duplicate`):
the group then reads that one array instead of the producer's value, so no group reads more
than before, and once every user has done so the producer's own pass over memory is gone
(a training step's GELU: the forward values its backward reads, x*x, x/2, tanh+1, the
biased product, are recomputed there from the product and the tanh). Ops with side effects
are never fused, nor the ops of scalar computations (reducers, comparators), which kernels
call on arrays of any shape. A group of one op without a broadcast to absorb is left as it
is.

Before grouping, chains of constant scalings and shifts (a batch norm and a scale layer)
become one multiply and one add (`affine.py`), their constants computed at compile time:
the one change of results beyond rounding-free rewrites, by the reassociation's rounding.
The kernel (`ir/kernels/fused.py`) evaluates a group block by block in place, with the ops'
own numerics, so fusion itself changes no result; the one rewrite is `power(x, 2 or 3)` of
floats narrower than f64, computed as float64 products rounded once (`_small_power`).
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
from nxcc.ir.opdef import ElementwiseDef
from nxcc.ir.patterns import apply_patterns
from nxcc.ir.rewrite import constant_value
from nxcc.passes.dead_code_elimination import DeadCodeElimination
from nxcc.passes.fusion.affine import fold_affine_chains
from nxcc.passes.fusion.normalize import FuseLayerNorm, FuseSoftmax
from nxcc.passes.fusion.pads import SumOfPads
from nxcc.passes.ir_edit import replace_ops


@dataclass(frozen=True)
class FuseElementwise:
    """Replaces softmax and layer norm chains by their fused row ops (`normalize`), sums
    of zero-padded pieces by their concatenation (`pads`) and chains of constant scalings
    and shifts by one of each (`affine`), then each group of elementwise ops by one
    `fused_elementwise` op."""

    name: ClassVar[str] = "fuse"

    def run(self, module: Module) -> bool:
        changed = apply_patterns(module, [FuseSoftmax(module), FuseLayerNorm(module),
                                          SumOfPads()])
        if changed:
            DeadCodeElimination().run(module)
        folded = False
        for fn in module.functions.values():
            if not scalar_computation(fn):
                folded |= fold_affine_chains(module, fn)
        if folded:
            DeadCodeElimination().run(module)
        changed |= folded
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
    if op is None or op.opdef is not ops.broadcast_in_dim or op.result.type.shape != shape:
        return None
    dims = attr_ints(op.attrs, "broadcast_dimensions")
    if any(b <= a for a, b in zip(dims, dims[1:], strict=False)):
        return None
    return op.operands[0], dims


#: ops copied into a group to compute one value it reads, at most (`_copy_plan`)
COPY_LIMIT = 8


@dataclass
class Group:
    """The ops of one group (root last once sorted) and its operands with their dims."""

    root: Op
    members: dict[int, Op] = field(default_factory=dict)
    leaves: list[tuple[Value, tuple[int, ...]]] = field(default_factory=list)
    broadcasts: int = 0
    #: (id of a leaf's value, its dims) -> its index in `leaves`
    leaf_index: dict[tuple[int, tuple[int, ...]], int] = field(default_factory=dict)
    #: ids of the members that are copies: computed here, and by their own op for others
    copies: set[int] = field(default_factory=set)


@dataclass
class _Uses:
    """What the grouping knows of `fn` while it makes groups, latest root first."""

    position: dict[int, int]
    #: id of a value -> how many operands of the ops left after the groups made so far
    #: read it (a group's members' reads replaced by one read of each of its leaves)
    count: dict[int, int]
    #: id of a value -> the ops of the function that read it
    users: dict[int, list[Op]]
    #: ids of the function's results (used outside)
    outside: set[int]
    #: ids of the ops that are members (not copies) of a group
    taken: set[int] = field(default_factory=set)


def fuse_function(fn: Function) -> bool:
    """Fuse the groups of `fn` in place; True if any was made."""
    known = _Uses({id(op): i for i, op in enumerate(fn.body)}, {}, {},
                  {id(v) for v in fn.results})
    for op in fn.body:
        for v in op.operands:
            known.count[id(v)] = known.count.get(id(v), 0) + 1
            known.users.setdefault(id(v), []).append(op)
    groups: list[Group] = []
    for op in reversed(fn.body):
        if id(op) in known.taken or not fusible(op):
            continue
        if known.count.get(id(op.result), 0) == 0 and id(op.result) not in known.outside:
            for v in op.operands:  # dead (its users compute it themselves): reads nothing
                known.count[id(v)] -= 1
            continue
        group = _grow(op, known)
        if len(group.members) + group.broadcasts >= 2:
            groups.append(group)
            known.taken.update(i for i in group.members if i not in group.copies)
            _count_reads(group, known)
    if not groups:
        return False
    _rewrite(fn, groups, known.position)
    return True


def fusible(op: Op) -> bool:
    """An elementwise op of one result, without side effects."""
    opdef = op.opdef
    return opdef.elementwise and not opdef.side_effects and len(op.results) == 1


def cheap(op: Op) -> bool:
    """A fusible op that is not transcendental (not evaluated as `precise`): a few
    instructions per element, less than reading an element from memory."""
    return fusible(op) and not (isinstance(op.opdef, ElementwiseDef) and op.opdef.precise)


def _grow(root: Op, known: _Uses) -> Group:
    """The largest group rooted at `root`: producers are visited latest first, so when one
    is reached every user of it inside the group has already joined, and its operand reads
    from members (counted in `inside`) tell whether all its uses are in the group. A
    producer that is not a member is copied in when that pays (`_copy_plan`)."""
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
                heapq.heappush(heap, (-known.position[id(p)], id(p), p))

    push(root)
    while heap:
        _, _, p = heapq.heappop(heap)
        if id(p) in group.members:  # copied in already
            continue
        value = p.results[0]
        if (id(p) not in known.taken and fusible(p)
                and value.type.shape == shape and id(value) not in known.outside
                and inside[id(value)] == known.count[id(value)]):
            group.members[id(p)] = p
            push(p)
            continue
        plan = _copy_plan(p, group, known, {})
        if plan is not None and len(plan[1]) <= 1:
            for op in plan[0]:
                group.members[id(op)] = op
                group.copies.add(id(op))
    group.broadcasts = sum(
        1 for op in group.members.values() for v in op.operands
        if (v.owner is None or id(v.owner) not in group.members)
        and read_through(v.owner, shape) is not None)
    return group


def _copyable(op: Op, group: Group, known: _Uses) -> bool:
    """`op` may be computed again inside `group`: cheap, of the group's shape, its value
    in memory (not a member of another group), and read by elementwise ops only (so that
    its own op can go once they all compute it)."""
    value = op.results[0] if len(op.results) == 1 else None
    return (value is not None and cheap(op) and id(op) not in known.taken
            and value.type.shape == group.root.result.type.shape
            and id(value) not in known.outside
            and all(fusible(u) for u in known.users.get(id(value), [])))


def _copy_plan(op: Op, group: Group, known: _Uses,
               memo: dict[int, tuple[list[Op], dict[int, Value]] | None]
               ) -> tuple[list[Op], dict[int, Value]] | None:
    """(the ops to copy into `group` to compute `op` there, the full-size values they
    read by id), copying each cheap producer whose own reads are no more than one value
    (reading that value instead of the producer's); None if `op` may not be copied or the
    plan would copy more than COPY_LIMIT ops."""
    if id(op) in memo:
        return memo[id(op)]
    memo[id(op)] = None  # (a DAG has no cycles: this only bounds the work)
    if not _copyable(op, group, known):
        return None
    shape = group.root.result.type.shape
    copies, reads = [op], {}
    for v in op.operands:
        owner = v.owner
        if (owner is not None and id(owner) in group.members) or _free(v, shape):
            continue
        sub = _copy_plan(owner, group, known, memo) if owner is not None else None
        if sub is not None and len(sub[1]) <= 1:
            copies += [c for c in sub[0] if c not in copies]
            reads.update(sub[1])
        else:
            reads[id(v)] = v
    if len(copies) > COPY_LIMIT:
        return None
    memo[id(op)] = copies, reads
    return memo[id(op)]


def _free(v: Value, shape: tuple[int, ...]) -> bool:
    """Reading `v` in a group of `shape` costs no pass over memory: a splat constant (a
    broadcast scalar at run time) or a broadcast read through as a view of a smaller
    array."""
    d = constant_value(v)
    if d is not None:
        return d.is_splat
    return read_through(v.owner, shape) is not None


def _count_reads(group: Group, known: _Uses) -> None:
    """After `group` is made: its members' reads are gone, one read of each leaf (the
    fused op's) stays; a copy's own op still reads what it reads."""
    shape = group.root.result.type.shape
    leaves: set[int] = set()
    for op in group.members.values():
        copy = id(op) in group.copies
        for v in op.operands:
            if not copy:
                known.count[id(v)] -= 1
            if v.owner is not None and id(v.owner) in group.members:
                continue
            through = read_through(v.owner, shape)
            leaves.add(id(through[0] if through is not None else v))
    for i in leaves:
        known.count[i] = known.count.get(i, 0) + 1


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
    if op.opdef is not ops.power or not op.result.type.dtype.is_float:
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
        if op.opdef is ops.compare:
            qualifier = str(op.attrs["direction"])
        elif op.opdef is ops.convert:
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
    fused = {id(g.root): [fused_op(g, position)] for g in groups}
    dropped = {i for g in groups for i in g.members if i != id(g.root) and i not in g.copies}
    replace_ops(fn, fused, dropped)
