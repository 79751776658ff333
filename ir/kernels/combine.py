"""Scattering updates into flat targets with a combining computation (scatter and
select_and_scatter).

`combine_at(ctx, computation, targets, positions, updates)` performs, for every k in order,
``targets[positions[k]] = computation(targets[positions[k]], updates[k])`` (variadic: all
targets at once). When the computation is add/multiply/maximum/minimum (and, or, xor) of a
single target, numpy's unbuffered ``ufunc.at`` does it in one call. Otherwise the updates are
sorted by position (stably) and the updates aimed at the same position are first combined
with each other by a segmented tree (one `ctx.call` per level, O(log max duplicates) calls,
order kept), then each position is combined once with its target. For a "replace"
computation (returning its update argument) the last update wins.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from nxcc.ir.attributes import Symbol
from nxcc.ir.kernels.base import KernelContext
from nxcc.ir.kernels.common import as_compute, compute_dtype, store
from nxcc.ir.kernels.reducer import call, fast_ufunc


def combine_at(ctx: KernelContext, computation: Symbol | str, targets: Sequence[np.ndarray],
               positions: np.ndarray, updates: Sequence[np.ndarray]) -> None:
    """Combine 1-D `updates` into the writable 1-D `targets` at integer `positions`."""
    if positions.size == 0:
        return
    ufunc = fast_ufunc(ctx, computation, [t.dtype for t in targets])
    if ufunc is not None:
        target = targets[0]
        with np.errstate(all="ignore"):
            if compute_dtype(target.dtype) == target.dtype:
                ufunc.at(target, positions, updates[0].astype(target.dtype, copy=False))
            else:
                tmp = as_compute(target).copy()
                ufunc.at(tmp, positions, as_compute(updates[0].astype(target.dtype)))
                store(target, tmp)
        return

    order = np.argsort(positions, kind="stable")
    pos = positions[order]
    vals = [np.asarray(u)[order].astype(t.dtype) for u, t in zip(updates, targets, strict=True)]
    first = np.empty(pos.shape, dtype=bool)
    first[0] = True
    np.not_equal(pos[1:], pos[:-1], out=first[1:])
    heads = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    counts = np.diff(np.append(heads, pos.size))
    rank = np.arange(pos.size) - heads[group]
    count = counts[group]
    step = 1
    while step < counts.max():
        sel = np.flatnonzero((rank % (2 * step) == 0) & (rank + step < count))
        merged = call(ctx, computation, [v[sel] for v in vals] + [v[sel + step] for v in vals])
        for v, m in zip(vals, merged, strict=True):
            v[sel] = m
        step *= 2
    where = pos[heads]
    result = call(ctx, computation, [t[where] for t in targets] + [v[heads] for v in vals])
    for t, r in zip(targets, result, strict=True):
        t[where] = r
