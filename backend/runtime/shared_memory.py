"""The one-step collectives: every rank reads its group's operands where they lie.

This is the shared_memory algorithm (the physical cores of one logical core share an
address space) and the point_to_point one (a collective_permute reads its source's operand).
`compute` is rank `rank`'s result given every group member's published operands, read in
group order so every rank computes the same bits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.executor import ExecutionError
from nxcc.ir.attributes import AttrValue

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


def compute(opcode: str, slots: Sequence, group: list[int], rank: int,
            attrs: Mapping[str, AttrValue]) -> list[np.ndarray]:
    """Rank's result of `opcode` given every rank's operands (`slots[r]`)."""
    inputs = [slots[m] for m in group]
    size, pos = len(group), group.index(rank) if rank in group else 0
    if opcode == "all_reduce":
        fn = REDUCE[attrs["reduction"]]  # type: ignore[index]
        return [reduce_all(fn, [x[i] for x in inputs]) for i in range(len(inputs[0]))]
    if opcode == "all_gather":
        return [np.concatenate([x[0] for x in inputs], axis=attrs["dimension"])]  # type: ignore[arg-type]
    if opcode == "reduce_scatter":
        full = reduce_all(REDUCE[attrs["reduction"]], [x[0] for x in inputs])  # type: ignore[index]
        return [np.split(full, size, axis=attrs["dimension"])[pos].copy()]  # type: ignore[call-overload]
    if opcode == "all_to_all":
        split, concat = attrs["split_dimension"], attrs["concat_dimension"]
        parts = [np.split(x[0], size, axis=split)[pos] for x in inputs]  # type: ignore[call-overload]
        return [np.concatenate(parts, axis=concat)]  # type: ignore[arg-type]
    if opcode == "collective_permute":
        mine = slots[rank][0]
        for src, dst in attrs["source_target_pairs"]:  # type: ignore[union-attr]
            if dst == rank:
                return [np.array(slots[src][0], copy=True)]
        return [np.zeros_like(mine)]
    raise ExecutionError(f"{opcode} is not a collective this communicator performs")
