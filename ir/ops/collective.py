"""Collective placeholders: what to communicate (kind, reduction, replica groups), never how.

The runtime binds each one to an algorithm for the placement when it loads the NEFF.
"""

from __future__ import annotations

from nxcc.ir.attributes import AttrKind
from nxcc.ir.dtypes import DType
from nxcc.ir.opdef import AttrSpec, OpDef, define
from nxcc.ir.ops._rules import check_dims, fail
from nxcc.ir.types import TensorType

REDUCTIONS = ("sum", "prod", "max", "min", "and", "or")

_GROUPS = {"replica_groups": AttrSpec(AttrKind.INTS2, ()), "channel_id": AttrSpec(AttrKind.INT, 0)}


def group_size(attrs, op: str) -> int:
    """The common size of the replica groups (error if they differ or there are none)."""
    groups = attrs["replica_groups"]
    if not groups:
        raise fail(f"{op}: needs replica_groups to know its group size")
    sizes = {len(g) for g in groups}
    if len(sizes) != 1:
        raise fail(f"{op}: replica groups {groups} have different sizes")
    return sizes.pop()


def _all_reduce(ts, attrs, module):
    return list(ts)


all_reduce = define(
    OpDef(
        "all_reduce",
        _all_reduce,
        attrs={"reduction": AttrSpec(AttrKind.ENUM, choices=REDUCTIONS), **_GROUPS},
        operands=None,
        min_operands=1,
    )
)


def _tp_copy(ts, attrs, module):
    return [ts[0]]


# Megatron's "f" (copy to the tensor-parallel region): the identity forward, an all_reduce of
# the gradient over its replica groups backward (the AD rule). Nothing moves when it runs.
tp_copy = define(OpDef(
    "tp_copy", _tp_copy, attrs=dict(_GROUPS), operands=1,
    doc="Identity; its gradient is the sum over its replica groups (an all_reduce)."))


_CONTEXT = TensorType(DType.U32, ())


def _start_context(ts, attrs, module):
    return [_CONTEXT]


def _done_rule(sync: OpDef):
    def rule(ts, attrs, module):
        if not ts or ts[0] != _CONTEXT:
            raise fail(f"{sync.name}_done: expected the u32[] context of its "
                       f"{sync.name}_start first")
        return sync.type_rule(list(ts[1:]), attrs, module)

    return rule


def async_pair(sync: OpDef, done_attrs: bool = True) -> tuple[OpDef, OpDef]:
    """The asynchronous halves of collective `sync` (the latency-hiding pass and the HLO
    `-start`/`-done` pairs make them). The start takes `sync`'s operands and attributes,
    begins the communication and gives a u32[] context; the done takes that context and the
    same operands (and, when `done_attrs`, the same attributes: what its type needs) and
    gives `sync`'s results. Compute between the two overlaps the communication. Both have
    side effects: never folded, merged or removed."""
    n = sync.operands
    start = define(OpDef(f"{sync.name}_start", _start_context, attrs=sync.attrs, operands=n,
                         min_operands=sync.min_operands, side_effects=True,
                         doc=f"Starts {sync.name} (see its done)."))
    done = define(OpDef(f"{sync.name}_done", _done_rule(sync),
                        attrs=sync.attrs if done_attrs else {},
                        operands=None if n is None else n + 1,
                        min_operands=sync.min_operands + 1, side_effects=True,
                        doc=f"Ends {sync.name} (context first)."))
    return start, done


# all_reduce's done has no attributes: its results have its operands' types.
all_reduce_start, all_reduce_done = async_pair(all_reduce, done_attrs=False)


def _all_gather(ts, attrs, module):
    t = ts[0]
    dim = attrs["dimension"]
    check_dims("all_gather", "dimension", [dim], t.rank)
    shape = list(t.shape)
    shape[dim] *= group_size(attrs, "all_gather")
    return [t.with_shape(shape)]


all_gather = define(OpDef("all_gather", _all_gather,
             attrs={"dimension": AttrSpec(AttrKind.INT), **_GROUPS}, operands=1))


def _reduce_scatter(ts, attrs, module):
    t = ts[0]
    dim = attrs["dimension"]
    check_dims("reduce_scatter", "dimension", [dim], t.rank)
    n = group_size(attrs, "reduce_scatter")
    if t.shape[dim] % n:
        raise fail(f"reduce_scatter: dimension {dim} of {t} does not divide by {n}")
    shape = list(t.shape)
    shape[dim] //= n
    return [t.with_shape(shape)]


reduce_scatter = define(
    OpDef(
        "reduce_scatter",
        _reduce_scatter,
        attrs={"dimension": AttrSpec(AttrKind.INT),
               "reduction": AttrSpec(AttrKind.ENUM, choices=REDUCTIONS), **_GROUPS},
        operands=1,
    )
)


def _all_to_all(ts, attrs, module):
    t = ts[0]
    split, concat = attrs["split_dimension"], attrs["concat_dimension"]
    check_dims("all_to_all", "dimension", [split, concat], t.rank, unique=False)
    n = group_size(attrs, "all_to_all")
    if t.shape[split] % n:
        raise fail(f"all_to_all: split dimension {split} of {t} does not divide by {n}")
    shape = list(t.shape)
    shape[split] //= n
    shape[concat] *= n
    return [TensorType(t.dtype, tuple(shape))]


all_to_all = define(
    OpDef(
        "all_to_all",
        _all_to_all,
        attrs={"split_dimension": AttrSpec(AttrKind.INT),
               "concat_dimension": AttrSpec(AttrKind.INT), **_GROUPS},
        operands=1,
    )
)


def _collective_permute(ts, attrs, module):
    return [ts[0]]


collective_permute = define(
    OpDef(
        "collective_permute",
        _collective_permute,
        attrs={"source_target_pairs": AttrSpec(AttrKind.INTS2),
               "channel_id": AttrSpec(AttrKind.INT, 0)},
        operands=1,
        doc="Each (source, target) pair sends source's operand to target; others get zeros.",
    )
)


all_gather_start, all_gather_done = async_pair(all_gather)
reduce_scatter_start, reduce_scatter_done = async_pair(reduce_scatter)
all_to_all_start, all_to_all_done = async_pair(all_to_all)
collective_permute_start, collective_permute_done = async_pair(collective_permute)

#: Each collective with an asynchronous form: its (start, done).
ASYNC_PAIRS: dict[OpDef, tuple[OpDef, OpDef]] = {
    all_reduce: (all_reduce_start, all_reduce_done),
    all_gather: (all_gather_start, all_gather_done),
    reduce_scatter: (reduce_scatter_start, reduce_scatter_done),
    all_to_all: (all_to_all_start, all_to_all_done),
    collective_permute: (collective_permute_start, collective_permute_done)}
#: Every start and done.
ASYNC_OPS: tuple[OpDef, ...] = tuple(d for pair in ASYNC_PAIRS.values() for d in pair)


# Point to point: a source rank hands one rank its operand. `send` / `recv` start a transfer
# and give a context (u32[], XLA's send/recv context); `send_done` / `recv_done` complete it,
# `recv_done` giving the received value (zeros on a rank that is no pair's target).
_P2P = {"source_target_pairs": AttrSpec(AttrKind.INTS2), "channel_id": AttrSpec(AttrKind.INT, 0)}
def _context(ts, attrs, module):
    return [_CONTEXT]


def _received(ts, attrs, module):
    if ts[0] != _CONTEXT:
        raise fail(f"recv_done: expected the u32[] context of a recv, found {ts[0]}")
    return [TensorType(attrs["dtype"], tuple(attrs["shape"]))]


send = define(OpDef("send", _context, attrs=_P2P, operands=1, side_effects=True,
                   doc="Each (source, target) pair: source sends its operand to target."))
send_done = define(OpDef("send_done", _context, operands=1, side_effects=True,
                        doc="The send whose context it takes has completed."))
recv = define(OpDef("recv", _context, attrs=_P2P, operands=0, side_effects=True,
                   doc="Starts receiving on the pairs' targets."))
recv_done = define(OpDef("recv_done", _received,
                        attrs={**_P2P, "dtype": AttrSpec(AttrKind.DTYPE),
                               "shape": AttrSpec(AttrKind.INTS)},
                        operands=1, side_effects=True,
                        doc="The received value on a pair's target; zeros elsewhere."))
