"""sort: multi-operand sort along one dimension by a comparator computation.

The comparator takes (a0, b0, a1, b1, ...) and says whether element a goes before element b;
it must be a strict weak order (as HLO requires). The result is always the *stable* sort.

Fast path, verified: candidate permutations cheap for numpy are tried in turn (a stable
argsort of operand 0 ascending, then descending, then a lexicographic sort over all operands)
and one is accepted only if the comparator confirms it: no adjacent pair is inverted
(comparator(next, prev) false everywhere) and equivalent neighbours keep their original order.
For a strict weak order that is exactly "the stable sort", so the fast path is never wrong.
Two comparator calls on whole arrays verify a candidate.

General path: a bitonic sorting network over the (padded to a power of two) dimension,
comparing whole arrays of pairs at each of its O(log^2 n) stages with two comparator calls,
and breaking ties by original index (which makes the order total, hence stable).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from nxcc.ir import ops
from nxcc.ir.attributes import AttrValue, Symbol, attr_of
from nxcc.ir.kernels.base import KernelContext, kernel
from nxcc.ir.kernels.common import as_compute
from nxcc.ir.kernels.plan import kernel_only
from nxcc.ir.kernels.reducer import call


def _compare(ctx: KernelContext, comparator: Symbol, lhs: Sequence[np.ndarray],
             rhs: Sequence[np.ndarray]) -> np.ndarray:
    """comparator(lhs, rhs) elementwise, as a bool array of lhs[0]'s shape."""
    args = [v for pair in zip(lhs, rhs, strict=True) for v in pair]
    got = call(ctx, comparator, args)[0]
    return np.broadcast_to(got, lhs[0].shape).astype(bool)


def _candidates(xs: Sequence[np.ndarray]) -> Iterator[np.ndarray]:
    key = as_compute(xs[0])
    yield np.argsort(key, axis=-1, kind="stable")
    n = key.shape[-1]
    yield n - 1 - np.argsort(key[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    if len(xs) > 1:
        keys = [as_compute(x) for x in reversed(xs)]
        yield np.lexsort(keys, axis=-1)


def _verified(ctx: KernelContext, comparator: Symbol, xs: Sequence[np.ndarray],
              perm: np.ndarray) -> bool:
    """True when `perm` stably sorts `xs` by the comparator (see module doc)."""
    ys = [np.take_along_axis(x, perm, axis=-1) for x in xs]
    prev = [y[..., :-1] for y in ys]
    nxt = [y[..., 1:] for y in ys]
    inverted = _compare(ctx, comparator, nxt, prev)
    if inverted.any():
        return False
    tie = ~_compare(ctx, comparator, prev, nxt)
    return bool(np.all(~tie | (perm[..., 1:] > perm[..., :-1])))


def _bitonic_argsort(ctx: KernelContext, comparator: Symbol,
                     xs: Sequence[np.ndarray]) -> np.ndarray:
    """The stable sorting permutation along the last axis, by a bitonic network."""
    shape = xs[0].shape
    n = shape[-1]
    m = 1 << (n - 1).bit_length()
    keys = [np.concatenate([x, np.repeat(x[..., :1], m - n, axis=-1)], axis=-1) for x in xs]
    index = np.broadcast_to(np.arange(m), (*shape[:-1], m)).copy()
    positions = np.arange(m)
    k = 2
    while k <= m:
        j = k // 2
        while j >= 1:
            lo = positions[(positions & j) == 0]
            hi = lo + j
            ascending = (lo & k) == 0
            a = [x[..., lo] for x in keys]
            b = [x[..., hi] for x in keys]
            ia, ib = index[..., lo], index[..., hi]
            a_lt_b = _compare(ctx, comparator, a, b)
            b_lt_a = _compare(ctx, comparator, b, a)
            valid_a, valid_b = ia < n, ib < n
            both = valid_a & valid_b
            a_first = np.where(both, a_lt_b | (~b_lt_a & (ia < ib)),
                               np.where(valid_a != valid_b, valid_a, ia < ib))
            swap = np.where(ascending, ~a_first, a_first)
            for x in (*keys, index):
                xl, xh = x[..., lo], x[..., hi]
                x[..., lo] = np.where(swap, xh, xl)
                x[..., hi] = np.where(swap, xl, xh)
            j //= 2
        k *= 2
    return index[..., :n]


@kernel(ops.sort)
def sort(args: Sequence[np.ndarray], outs: Sequence[np.ndarray],
         attrs: Mapping[str, AttrValue], ctx: KernelContext) -> None:
    """Sort every operand along `dimension` by the permutation the comparator defines."""
    dim = attr_of(attrs, "dimension", int)
    comparator = attr_of(attrs, "comparator", Symbol)
    xs = [np.moveaxis(a, dim, -1) for a in args]
    if xs[0].shape[-1] <= 1 or xs[0].size == 0:
        for out, a in zip(outs, args, strict=True):
            np.copyto(out, a)
        return
    perm = next((p for p in _candidates(xs) if _verified(ctx, comparator, xs, p)), None)
    if perm is None:
        perm = _bitonic_argsort(ctx, comparator, xs)
    for out, x in zip(outs, xs, strict=True):
        np.copyto(np.moveaxis(out, dim, -1), np.take_along_axis(x, perm, axis=-1))


kernel_only(ops.sort)
