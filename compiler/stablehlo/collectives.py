"""Collectives as `shard_map` programs hold them: all_reduce, all_gather, reduce_scatter,
all_to_all (split and concat on one dimension, as HLO's array form), collective_permute.
Replica groups are a dense NxM (entries -1 pad shorter groups), the channel is
`#stablehlo.channel_handle<handle = H, type = T>`."""

from __future__ import annotations

from nxcc.compiler.stablehlo.attrs import AttrReader, hash_fields
from nxcc.compiler.stablehlo.builder import CompBuilder
from nxcc.compiler.stablehlo.registry import converts
from nxcc.compiler.stablehlo.syntax import DenseAttr, HashAttr, Op
from nxcc.ir.sharding_notation.hlo_sharding import ReplicaGroups


def _rows(a: AttrReader, name: str) -> tuple[tuple[int, ...], ...]:
    v = a.get(name)
    if v is None:
        return ()
    if not isinstance(v, DenseAttr):
        raise a.error(f"expected a dense<...> : tensor<NxMxi64> for '{name}', found {v!r}",
                      name)
    arr = a.dense(v, name)
    arr = arr.reshape(arr.shape[0] if arr.ndim else 1, -1)
    return tuple(tuple(int(d) for d in row if d >= 0) for row in arr)


def _common(a: AttrReader) -> dict[str, object]:
    out: dict[str, object] = {"replica_groups": ReplicaGroups(_rows(a, "replica_groups"))}
    channel = a.get("channel_handle")
    if isinstance(channel, HashAttr):
        out["channel_id"] = hash_fields(channel).get("handle", 0)
    return out


@converts("stablehlo.all_reduce")
def all_reduce(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "all-reduce", op.operands,
           {**_common(a), "to_apply": b.conv.region(b, op, 0, "reduction")})


@converts("stablehlo.all_gather")
def all_gather(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "all-gather", op.operands,
           {**_common(a), "dimensions": (a.int_("all_gather_dim"),)})


@converts("stablehlo.reduce_scatter")
def reduce_scatter(b: CompBuilder, op: Op, a: AttrReader) -> None:
    b.emit(op, "reduce-scatter", op.operands, {
        **_common(a), "dimensions": (a.int_("scatter_dimension"),),
        "to_apply": b.conv.region(b, op, 0, "reduction")})


@converts("stablehlo.all_to_all")
def all_to_all(b: CompBuilder, op: Op, a: AttrReader) -> None:
    split, concat = a.int_("split_dimension"), a.int_("concat_dimension")
    if split != concat:
        raise a.error(f"expected split_dimension = concat_dimension (HLO's array form), "
                      f"found {split} and {concat}", "split_dimension")
    b.emit(op, "all-to-all", op.operands, {**_common(a), "dimensions": (split,)})


@converts("stablehlo.collective_permute")
def collective_permute(b: CompBuilder, op: Op, a: AttrReader) -> None:
    attrs = _common(a)
    del attrs["replica_groups"]
    b.emit(op, "collective-permute", op.operands,
           {**attrs, "source_target_pairs": _rows(a, "source_target_pairs")})
