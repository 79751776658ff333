"""The one-step collectives: every rank reads its group's operands where they lie.

This is the shared_memory algorithm (the physical cores of one logical core share an
address space) and the point_to_point one (a collective_permute reads its source's operand).
`compute` is rank `rank`'s result given every group member's published operands, read in
group order so every rank computes the same bits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.executor import ExecutionError
from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_ints2, attr_of
from nxcc.ir.registry import OpTable

REDUCE = {
    "sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
    "and": np.logical_and, "or": np.logical_or,
}


def members(attrs: Mapping[str, AttrValue], rank: int, n: int) -> list[int]:
    """The replica group of `rank` (every rank when the collective lists no groups)."""
    groups = attrs.get("replica_groups") or ()
    for group in groups:  # type: ignore[union-attr]
        if rank in group:
            return list(group)
    return list(range(n))


def reduce_all(fn, arrays: Sequence[np.ndarray]) -> np.ndarray:
    """`fn` folded over `arrays` left to right, in the first one's dtype."""
    dtype = arrays[0].dtype
    out = np.array(arrays[0], copy=True)
    for a in arrays[1:]:
        out = fn(out, a)
    return np.asarray(out).astype(dtype, copy=False)


#: compute(slots, group, rank, attrs): rank's results given every rank's operands
OneStep = Callable[[Sequence, list[int], int, Mapping[str, AttrValue]], list[np.ndarray]]
#: collective -> how a rank computes its results from every member's operands
ONE_STEP: OpTable[OneStep] = OpTable("one-step collective")


def compute(opcode: str, slots: Sequence, group: list[int], rank: int,
            attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    """Rank's result of the collective named `opcode` given every rank's operands
    (`slots[r]`)."""
    step = ONE_STEP.get(opcode)
    if step is None:
        raise ExecutionError(f"{opcode} is not a collective this communicator performs")
    return step(slots, group, rank, attrs)


def _position(group: list[int], rank: int) -> int:
    return group.index(rank) if rank in group else 0


@ONE_STEP.register(ops.all_reduce)
def _all_reduce(slots: Sequence, group: list[int], rank: int,
                attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    inputs = [slots[m] for m in group]
    fn = REDUCE[attr_of(attrs, "reduction", str)]
    return [reduce_all(fn, [x[i] for x in inputs]) for i in range(len(inputs[0]))]


@ONE_STEP.register(ops.all_gather)
def _all_gather(slots: Sequence, group: list[int], rank: int,
                attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    return [np.concatenate([slots[m][0] for m in group], axis=attr_of(attrs, "dimension", int))]


@ONE_STEP.register(ops.reduce_scatter)
def _reduce_scatter(slots: Sequence, group: list[int], rank: int,
                    attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    full = reduce_all(REDUCE[attr_of(attrs, "reduction", str)], [slots[m][0] for m in group])
    blocks = np.split(full, len(group), axis=attr_of(attrs, "dimension", int))
    return [blocks[_position(group, rank)].copy()]


@ONE_STEP.register(ops.all_to_all)
def _all_to_all(slots: Sequence, group: list[int], rank: int,
                attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    split, concat = attr_of(attrs, "split_dimension", int), attr_of(attrs, "concat_dimension", int)
    pos = _position(group, rank)
    parts = [np.split(slots[m][0], len(group), axis=split)[pos] for m in group]
    return [np.concatenate(parts, axis=concat)]


@ONE_STEP.register(ops.collective_permute)
def _collective_permute(slots: Sequence, group: list[int], rank: int,
                        attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    mine = slots[rank][0]
    for src, dst in attr_ints2(attrs, "source_target_pairs"):
        if dst == rank:
            return [np.array(slots[src][0], copy=True)]
    return [np.zeros_like(mine)]
