"""The ring algorithms: collectives in which a rank only ever exchanges data with its ring
neighbours, one step at a time.

`run_ring(opcode, args, attrs, group, ring, rank, exchange)` is rank `rank`'s side.
`group` is its replica group as written (positions in it order the data: the i-th block of
an all-gather comes from group member i), `ring` the same ranks in ring order (how data
flows), and `exchange(message)` one step: it sends `message` to the rank after this one in
the ring and returns what the rank before sent.

- reduce-scatter: the operand is cut into k blocks (block q belongs to group member q). At
  step s the rank at ring position p sends its running sum of the block of position
  p-1-s and adds its own part to the block arriving from p-1; after k-1 steps it holds the
  full reduction of its own block.
- all-gather: at step s the rank sends the block of position p-s (its own first, then what
  it just received); after k-1 steps it has every block.
- all-reduce: the flattened operands cut into k chunks, reduce-scatter then all-gather; every
  chunk is reduced at one rank and copied to the others, so all ranks hold the same bits.
- all-to-all: each rank's operand is cut into k blocks, block q for group member q; a bundle
  of blocks travels the ring, every hop delivering one block and forwarding the rest.

Steps are those of `collective_binding` (2(k-1), k-1, k-1, k-1).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from nxcc.backend.runtime.shared_memory import REDUCE
from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, attr_of
from nxcc.ir.registry import OpTable

Exchange = Callable[[object], object]
#: algorithm(args, attrs, label, p, exchange): rank `p` of the ring's results (see `run_ring`)
RingAlgorithm = Callable[[Sequence[np.ndarray], Mapping[str, AttrValue], Sequence[int], int,
                          Exchange], list[np.ndarray]]
#: collective -> its ring algorithm
RING: OpTable[RingAlgorithm] = OpTable("ring algorithm")


def _combine(fn, received: np.ndarray, own: np.ndarray) -> np.ndarray:
    return np.asarray(fn(received, own)).astype(own.dtype, copy=False)


def reduce_scatter_steps(own: Mapping[int, list[np.ndarray]], label: Sequence[int], p: int,
                         exchange: Exchange, fn) -> list[np.ndarray]:
    """The full reduction of block `label[p]`; `own[label]` are this rank's parts."""
    k = len(label)
    acc = dict(own)
    for s in range(k - 1):
        got = exchange(acc[label[(p - 1 - s) % k]])
        recv = label[(p - 2 - s) % k]
        acc[recv] = [_combine(fn, g, o) for g, o in zip(got, own[recv], strict=True)]  # type: ignore[call-overload]
    return acc[label[p]]


def all_gather_steps(mine: object, label: Sequence[int], p: int, exchange: Exchange
                     ) -> dict[int, object]:
    """Every position's block by label, given this rank's (`label[p]`)."""
    k = len(label)
    have = {label[p]: mine}
    for s in range(k - 1):
        got = exchange(have[label[(p - s) % k]])
        have[label[(p - 1 - s) % k]] = got
    return have


def all_to_all_steps(parts: list[np.ndarray], label: Sequence[int], p: int,
                     exchange: Exchange) -> dict[int, np.ndarray]:
    """The block every group member sent this rank, by the member's group position."""
    k = len(label)
    me = label[p]
    received = {me: parts[me]}
    bundle: tuple[int, dict[int, np.ndarray]] = (me, {q: b for q, b in enumerate(parts)
                                                      if q != me})
    for _ in range(k - 1):
        got = exchange(bundle)
        assert isinstance(got, tuple)  # the neighbour's bundle
        origin, blocks = got
        received[origin] = blocks[me]
        bundle = (origin, {q: b for q, b in blocks.items() if q != me})
    return received


def run_ring(opcode: str, args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
             group: Sequence[int], ring: Sequence[int], rank: int, exchange: Exchange
             ) -> list[np.ndarray]:
    """Rank `rank`'s result of the collective named `opcode` by its ring algorithm (see the
    module docstring); ValueError for a collective that has none."""
    algorithm = RING.get(opcode)
    if algorithm is None:
        raise ValueError(f"{opcode} has no ring algorithm")
    label = [list(group).index(r) for r in ring]
    return algorithm(args, attrs, label, list(ring).index(rank), exchange)


@RING.register(ops.all_reduce)
def _all_reduce(args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
                label: Sequence[int], p: int, exchange: Exchange) -> list[np.ndarray]:
    k = len(label)
    fn = REDUCE[attr_of(attrs, "reduction", str)]
    flat = [np.array_split(np.ascontiguousarray(x).reshape(-1), k) for x in args]
    chunks = list(range(k))
    own = {c: [f[c] for f in flat] for c in chunks}
    done = reduce_scatter_steps(own, chunks, p, exchange, fn)
    have = all_gather_steps(done, chunks, p, exchange)
    return [np.concatenate([have[c][i] for c in chunks]).reshape(x.shape)  # type: ignore[index]
            for i, x in enumerate(args)]


@RING.register(ops.all_gather)
def _all_gather(args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
                label: Sequence[int], p: int, exchange: Exchange) -> list[np.ndarray]:
    have = all_gather_steps(args[0], label, p, exchange)
    return [np.concatenate([have[q] for q in range(len(label))],
                           axis=attr_of(attrs, "dimension", int))]


@RING.register(ops.reduce_scatter)
def _reduce_scatter(args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
                    label: Sequence[int], p: int, exchange: Exchange) -> list[np.ndarray]:
    fn = REDUCE[attr_of(attrs, "reduction", str)]
    blocks = np.split(args[0], len(label), axis=attr_of(attrs, "dimension", int))
    own = {q: [b] for q, b in enumerate(blocks)}
    return [np.ascontiguousarray(reduce_scatter_steps(own, label, p, exchange, fn)[0])]


@RING.register(ops.all_to_all)
def _all_to_all(args: Sequence[np.ndarray], attrs: Mapping[str, AttrValue],
                label: Sequence[int], p: int, exchange: Exchange) -> list[np.ndarray]:
    parts = np.split(args[0], len(label), axis=attr_of(attrs, "split_dimension", int))
    got = all_to_all_steps(parts, label, p, exchange)
    return [np.concatenate([got[q] for q in range(len(label))],
                           axis=attr_of(attrs, "concat_dimension", int))]
