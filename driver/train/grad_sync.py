"""Gradients across data-parallel ranks: buckets reduced on the communication thread.

`GradSync.start_bucket(i, flat_grads)` starts bucket i's reduction as soon as its gradients
are final (the engine calls it while the last micro-batch's backward still runs: the
buckets overlap the backward pass), and `start(flat_grads)` the remaining buckets
(`flat.FlatLayout`, the last layers' bucket first), all on the DP group's communication
thread and in the same order on every DP rank: an all-reduce of the bucket
(every DP rank then holds the summed gradient), or with ZeRO-1 a reduce-scatter (each DP
rank holds the summed gradient of its chunk only). `finish()` waits for them and returns
the rank's gradient shard (the whole vector without ZeRO-1). After the optimizer updated the
shard, `gather_params` all-gathers every bucket's chunks back into the full parameters
(ZeRO-1). The ring order of each reduction is fixed, so all DP ranks hold the same bits.

`norm_contribution` is this rank's part of the squared global gradient norm: each element
is counted on exactly one rank of the job (a TP-sharded parameter on every TP rank, a
replicated one on TP rank 0 only; without ZeRO-1 on DP rank 0 only, with it on the DP rank
whose chunk holds it).
"""

from __future__ import annotations

from concurrent.futures import Future

import numpy as np

from nxcc.backend.runtime.parallel_steps import in_runs
from nxcc.driver.train.flat import FlatLayout
from nxcc.driver.train.groups import Group


class GradSync:
    """One rank's side of the DP gradient reduction (see the module docstring)."""

    def __init__(self, layout: FlatLayout, dp_group: Group, zero1: bool) -> None:
        self.layout = layout
        self.group = dp_group
        self.zero1 = zero1 and dp_group.size > 1
        self.d = dp_group.index
        self._pending: list[tuple[slice, slice, Future]] = []
        self._started: set[int] = set()
        self._alone: np.ndarray | None = None  # a group of one: the gradient as given

    @property
    def shard_size(self) -> int:
        return self.layout.shard_size(self.zero1)

    def start_bucket(self, index: int, flat_grads: np.ndarray) -> None:
        """Start bucket `index`'s reduction now (its gradients are final), during the
        backward pass; `start` leaves it alone. Alone in its group, a rank's gradient is
        already the sum: `finish` returns `flat_grads` itself."""
        if self.group.size == 1:
            self._started.add(index)
            self._alone = flat_grads
            return
        whole, part = self.layout.bucket_slices(self.d)[index]
        op = "reduce_scatter" if self.zero1 else "all_reduce"
        self._started.add(index)
        self._pending.append((whole, part, self.group.start(op, flat_grads[whole])))

    def start(self, flat_grads: np.ndarray) -> None:
        """Start the reduction of every bucket not started yet, in bucket order (the caller
        may reuse `flat_grads` at once, except alone in its group: until `finish`)."""
        for index in range(len(self.layout.buckets)):
            if index not in self._started:
                self.start_bucket(index, flat_grads)

    def finish(self) -> np.ndarray:
        """The reduced gradient shard of this rank."""
        if self._alone is not None:
            out, self._alone = self._alone, None
            self._started = set()
            return out
        out = np.empty(self.shard_size, np.float32)
        for whole, part, future in self._pending:
            out[part if self.zero1 else whole] = future.result()
        self._pending = []
        self._started = set()
        return out

    def gather_params(self, flat_params: np.ndarray, shard: np.ndarray) -> None:
        """Write the updated `shard` and the other DP ranks' chunks into `flat_params`."""
        if not self.zero1:
            if not _same_array(flat_params, shard):  # else updated in place already
                flat_params[:] = shard
            return
        futures = [(whole, self.group.start("all_gather", shard[part]))
                   for whole, part in self.layout.bucket_slices(self.d)]
        for whole, future in futures:
            flat_params[whole] = future.result()

    def count_mask(self, counted: np.ndarray) -> NormMask | None:
        """`counted` (1.0 per flat element this TP rank counts) cut to this rank's shard, or
        zeros when another DP rank counts it (see the module docstring); None when every
        element of the shard counts."""
        if self.zero1:
            mask = NormMask(self.layout.shard(counted, self.d, True))
        else:
            mask = NormMask(counted if self.d == 0 else np.zeros_like(counted))
        return None if mask.every else mask


#: elements of the gradient widened to float64 at once by `norm_contribution`: under the
#: 10,000 from which OpenBLAS's dot wakes its other threads for every call (1 << 15 took
#: 380 ms instead of 25 for 16.9M elements on two BLAS threads of a busy 2-core machine)
NORM_CHUNK = 1 << 13


class NormMask:
    """The elements of a gradient shard a rank counts in the global norm (`values`: 1.0
    where it does, 0.0 where not) and, for each NORM_CHUNK-element chunk, whether it counts
    every element (`whole`): `norm_contribution` skips the product of such a chunk with the
    mask (the same bits: g * 1.0 is g)."""

    def __init__(self, values: np.ndarray) -> None:
        self.values = values
        self.chunk = NORM_CHUNK
        starts = np.arange(0, values.size, self.chunk)
        ones = values == 1
        self.whole = np.logical_and.reduceat(ones, starts) if values.size else ones
        self.every = bool(np.all(ones))
        """Every element counts (the mask changes nothing)."""


def norm_contribution(grad_shard: np.ndarray, mask: NormMask | np.ndarray | None,
                      threads: int = 1) -> float:
    """The sum of squares of the elements of `grad_shard` this rank counts (`mask`: 1 where
    it does, 0 where not; None: every element), in float64: NORM_CHUNK elements at a time,
    widened into buffers that stay in cache (no float64 copy of the whole shard), each
    chunk's sum kept and the chunks' sums added in order, so that `threads` (sharing the
    chunks) does not change the bits."""
    if mask is not None and not isinstance(mask, NormMask):
        mask = NormMask(mask)
    if mask is not None and mask.chunk != NORM_CHUNK:
        mask = NormMask(mask.values)
    n = grad_shard.size
    starts = range(0, n, NORM_CHUNK)
    sums = np.zeros(len(starts), np.float64)
    values = mask.values if mask is not None else None
    whole = mask.whole.tolist() if mask is not None else [True] * len(starts)

    def chunks(first: int, end: int) -> None:
        wide = np.empty(min(n, NORM_CHUNK), np.float64)
        counted = np.empty_like(wide) if values is not None else wide
        for k in range(first, end):
            start = starts[k]
            stop = min(n, start + NORM_CHUNK)
            g = wide[:stop - start]
            np.copyto(g, grad_shard[start:stop])
            if whole[k]:
                sums[k] = np.dot(g, g)
                continue
            w = counted[:stop - start]
            np.multiply(g, values[start:stop], out=w)  # type: ignore[index]
            sums[k] = np.dot(w, g)

    in_runs(len(starts), threads, lambda _, first, end: chunks(first, end), "nxcc-norm")
    total = 0.0
    for s in sums.tolist():
        total += s
    return total


def _same_array(a: np.ndarray, b: np.ndarray) -> bool:
    """`a` and `b` are the same elements of the same memory."""
    return (a.shape == b.shape and a.dtype == b.dtype and a.strides == b.strides
            and a.ctypes.data == b.ctypes.data)
