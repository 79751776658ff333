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


# The same results computed at once, from every member's operands (ranks that are threads of
# one process read each other's operands where they lie: `channel_comm`'s meeting points).

#: algorithm(operands, attrs, label, p, outs): rank `p`'s results given `operands[q]`, the
#: operands of group member q (the same bits as the ring's steps), written into `outs` when
#: the algorithm can and they are given (else fresh arrays)
AtOnce = Callable[[Sequence[Sequence[np.ndarray]], Mapping[str, AttrValue], Sequence[int], int,
                   Sequence[np.ndarray] | None], list[np.ndarray]]
#: collective -> its results computed at once
AT_ONCE: OpTable[AtOnce] = OpTable("ring algorithm at once")


def ring_result(opcode: str, operands: Mapping[int, Sequence[np.ndarray]],
                attrs: Mapping[str, AttrValue], group: Sequence[int], ring: Sequence[int],
                rank: int, outs: Sequence[np.ndarray] | None = None) -> list[np.ndarray]:
    """What `run_ring` gives rank `rank`, computed from every member's operands
    (`operands[r]` those of rank r) instead of step by step: each block reduced in the
    order its ring steps fold it (starting at the ring position after its owner's, ending
    at the owner), so the results are the same bits. An all-reduce, all-gather or
    all-to-all writes them straight into `outs` when given (arrays of the results' shapes
    and dtypes, C-contiguous for an all-reduce, sharing no memory with an operand); other
    results are fresh arrays. ValueError for a collective that has none."""
    algorithm = AT_ONCE.get(opcode)
    if algorithm is None:
        raise ValueError(f"{opcode} has no ring algorithm")
    group = list(group)
    label = [group.index(r) for r in ring]
    return algorithm([operands[r] for r in group], attrs, label, list(ring).index(rank), outs)


def _fold_into(fn, a: np.ndarray, b: np.ndarray, out: np.ndarray) -> None:
    """out = fn(a, b) in out's dtype (`_combine`'s result, written in place)."""
    try:
        fn(a, b, out=out)
    except TypeError:  # a result numpy will not cast into out by itself
        np.copyto(out, _combine(fn, a, b), casting="unsafe")


def _chunk(n: int, k: int, c: int) -> slice:
    """Chunk c of `np.array_split` of n elements into k (the first n % k one longer)."""
    size, longer = divmod(n, k)
    start = c * size + min(c, longer)
    return slice(start, start + size + (c < longer))


def _fold_order(label: Sequence[int], p: int) -> list[int]:
    """The group members whose parts of ring position p's block are folded, in order."""
    k = len(label)
    return [label[(p + 1 + j) % k] for j in range(k)]


@AT_ONCE.register(ops.all_reduce)
def _all_reduce_at_once(operands: Sequence[Sequence[np.ndarray]],
                        attrs: Mapping[str, AttrValue], label: Sequence[int], p: int,
                        outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
    k = len(label)
    fn = REDUCE[attr_of(attrs, "reduction", str)]
    results = []
    for i, x in enumerate(operands[label[p]]):
        flat = [np.ascontiguousarray(member[i]).reshape(-1) for member in operands]
        given = outs[i] if outs is not None else None
        if (given is not None and given.shape == x.shape and given.dtype == x.dtype
                and given.flags.c_contiguous):
            whole = given
        else:
            whole = np.empty(x.shape, x.dtype)
        out = whole.reshape(-1)
        for c in range(k):  # chunk c is reduced at ring position c (`_all_reduce`)
            block = _chunk(out.size, k, c)
            first, *rest = _fold_order(label, c)
            if not rest:
                out[block] = flat[first][block]
            acc = flat[first][block]
            for q in rest:
                _fold_into(fn, acc, flat[q][block], out[block])
                acc = out[block]
        results.append(whole)
    return results


@AT_ONCE.register(ops.reduce_scatter)
def _reduce_scatter_at_once(operands: Sequence[Sequence[np.ndarray]],
                            attrs: Mapping[str, AttrValue], label: Sequence[int], p: int,
                            outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
    fn = REDUCE[attr_of(attrs, "reduction", str)]
    axis = attr_of(attrs, "dimension", int)
    first, *rest = (np.split(operands[q][0], len(label), axis=axis)[label[p]]
                    for q in _fold_order(label, p))
    out = np.array(first, order="C")
    for part in rest:
        _fold_into(fn, out, part, out)
    return [out]


@AT_ONCE.register(ops.all_gather)
def _all_gather_at_once(operands: Sequence[Sequence[np.ndarray]],
                        attrs: Mapping[str, AttrValue], label: Sequence[int], p: int,
                        outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
    return [_concatenate([member[0] for member in operands], attr_of(attrs, "dimension", int),
                         outs)]


@AT_ONCE.register(ops.all_to_all)
def _all_to_all_at_once(operands: Sequence[Sequence[np.ndarray]],
                        attrs: Mapping[str, AttrValue], label: Sequence[int], p: int,
                        outs: Sequence[np.ndarray] | None) -> list[np.ndarray]:
    split = attr_of(attrs, "split_dimension", int)
    return [_concatenate([np.split(member[0], len(label), axis=split)[label[p]]
                          for member in operands], attr_of(attrs, "concat_dimension", int),
                         outs)]


def _concatenate(parts: Sequence[np.ndarray], axis: int, outs: Sequence[np.ndarray] | None
                 ) -> np.ndarray:
    """`parts` concatenated along `axis`, into `outs[0]` when it is given and fits."""
    out = outs[0] if outs is not None else None
    if out is not None and out.dtype == parts[0].dtype:
        try:
            return np.concatenate(parts, axis=axis, out=out)
        except ValueError:  # another shape
            pass
    return np.concatenate(parts, axis=axis)
