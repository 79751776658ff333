"""A rank's parameters (and gradients) as one flat f32 vector cut into buckets.

The parameters are laid out in reverse order (the backward pass finishes the last layers'
gradients first), then cut into buckets of about `bucket_bytes`, each padded with zeros to a
multiple of the DP degree, so every bucket can be reduce-scattered into DP equal chunks.
DP rank d's shard (ZeRO-1) is chunk d of every bucket, in bucket order; without ZeRO-1 the
shard is the whole vector. Padding stays zero: its gradient is zero, so no optimizer moves it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bucket:
    start: int
    size: int  # padded: a multiple of the DP degree

    def chunk(self, d: int, dp: int) -> slice:
        c = self.size // dp
        return slice(self.start + d * c, self.start + (d + 1) * c)


class FlatLayout:
    """Where each parameter sits in the flat vector, and the buckets."""

    def __init__(self, shapes: Sequence[tuple[int, ...]], dp: int, bucket_bytes: int) -> None:
        self.shapes = [tuple(s) for s in shapes]
        self.dp = dp
        sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = [0] * len(sizes)
        self.buckets: list[Bucket] = []
        self.bucket_params: list[list[int]] = []  # the parameters each bucket holds
        members: list[int] = []
        pos = filled = 0
        start = 0
        limit = max(bucket_bytes // 4, 1)
        for i in reversed(range(len(sizes))):
            self.offsets[i] = pos
            pos += sizes[i]
            filled += sizes[i]
            members.append(i)
            if filled >= limit or i == 0:
                padded = -(-filled // dp) * dp
                self.buckets.append(Bucket(start, padded))
                self.bucket_params.append(members)
                members = []
                pos = start = start + padded
                filled = 0
        self.size = pos
        self.sizes = sizes

    @property
    def used(self) -> int:
        """Elements that hold parameters (no padding)."""
        return sum(self.sizes)

    def views(self, flat: np.ndarray) -> list[np.ndarray]:
        """Each parameter as a view of `flat`, shaped."""
        return [flat[o:o + n].reshape(s)
                for o, n, s in zip(self.offsets, self.sizes, self.shapes, strict=True)]

    def shard_size(self, zero1: bool) -> int:
        return self.size // self.dp if zero1 else self.size

    def shard(self, flat: np.ndarray, d: int, zero1: bool) -> np.ndarray:
        """DP rank d's part of `flat` (a copy with ZeRO-1, else `flat` itself)."""
        if not zero1:
            return flat
        return np.concatenate([flat[b.chunk(d, self.dp)] for b in self.buckets])

    def unshard_into(self, flat: np.ndarray, shard: np.ndarray, d: int) -> None:
        """Write DP rank d's shard back into its chunks of `flat`."""
        pos = 0
        for b in self.buckets:
            c = b.size // self.dp
            flat[b.chunk(d, self.dp)] = shard[pos:pos + c]
            pos += c

    def bucket_slices(self, d: int) -> list[tuple[slice, slice]]:
        """Per bucket: (its range in the flat vector, its chunk's range in the shard)."""
        out, pos = [], 0
        for b in self.buckets:
            c = b.size // self.dp
            out.append((slice(b.start, b.start + b.size), slice(pos, pos + c)))
            pos += c
        return out
