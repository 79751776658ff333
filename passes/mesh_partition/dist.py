"""Where a value lies over the N ranks of a device mesh: a `Dist`.

A `Dist` is a device grid of shape ``tiles + (partial, copies)``, every rank in it once:

- ``tiles[d]`` blocks along data dimension d (equal blocks: the dimension divides);
- ``partial`` > 1: the ranks along that axis hold summands (or maxima, minima... by
  `reduction`) of the same block, which an all-reduce over them combines;
- ``copies``: ranks along the last axis hold the same data.

It is XLA's tiled HloSharding (``last_tile_dim_replicate`` is ``copies``) plus a pending
reduction. Every method is pure; collectives are described by their replica groups (each
group ordered by block index, the order all-gather concatenates in).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from nxcc.ir.spmd import TileLayout

Groups = tuple[tuple[int, ...], ...]


def _groups(arr: np.ndarray) -> Groups:
    return tuple(tuple(int(x) for x in row) for row in arr)


@dataclass(frozen=True)
class Dist:
    """See the module docstring. `devices` is the grid in row-major order; within each
    (block, summand) cell the copies are sorted, so equal placements compare equal."""

    tiles: tuple[int, ...]
    devices: tuple[int, ...]
    partial: int = 1
    copies: int = 1
    reduction: str = "sum"

    @staticmethod
    def of_grid(grid: np.ndarray, reduction: str = "sum") -> Dist:
        """The Dist of a grid shaped ``tiles + (partial, copies)``."""
        grid = np.sort(np.asarray(grid, dtype=np.int64), axis=-1)
        *tiles, partial, copies = grid.shape
        return Dist(tuple(int(t) for t in tiles), tuple(int(x) for x in grid.reshape(-1)),
                    int(partial), int(copies), reduction if partial > 1 else "sum")

    @staticmethod
    def replicated(rank: int, n: int) -> Dist:
        return Dist((1,) * rank, tuple(range(n)), 1, n)

    @staticmethod
    def of_layout(layout: TileLayout | None, rank: int, n: int) -> Dist:
        """A parameter's or result's layout (None, replicated or maximal: replicated)."""
        if layout is None or layout.owner is not None or not layout.tiles:
            return Dist.replicated(rank, n)
        grid = np.asarray(layout.devices).reshape(*layout.tiles, 1, layout.copies)
        return Dist.of_grid(grid)

    @property
    def n(self) -> int:
        return len(self.devices)

    @property
    def rank(self) -> int:
        return len(self.tiles)

    @cached_property
    def grid(self) -> np.ndarray:
        return np.asarray(self.devices, dtype=np.int64).reshape(
            *self.tiles, self.partial, self.copies)

    @cached_property
    def coords(self) -> np.ndarray:
        """(N, rank) block index of each rank along each data dimension."""
        out = np.zeros((self.n, self.rank + 2), dtype=np.int64)
        for idx in np.ndindex(*self.grid.shape):
            out[self.grid[idx]] = idx
        return out[:, :self.rank]

    @property
    def is_replicated(self) -> bool:
        return self.partial == 1 and all(t == 1 for t in self.tiles)

    def fits(self, shape: Sequence[int]) -> bool:
        return len(shape) == self.rank and all(s % t == 0 for s, t in zip(shape, self.tiles,
                                                                          strict=True))

    def local_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        return tuple(s // t for s, t in zip(shape, self.tiles, strict=True))

    def starts(self, shape: Sequence[int]) -> np.ndarray:
        """(N, rank) where each rank's block starts in the global value."""
        return self.coords * np.asarray(self.local_shape(shape), dtype=np.int64)

    # -- collectives -------------------------------------------------------------------
    def reduce_groups(self) -> Groups:
        """The all-reduce groups that combine the summands (ranks along the partial axis)."""
        return _groups(np.moveaxis(self.grid, -2, -1).reshape(-1, self.partial))

    def reduced(self) -> Dist:
        """After the all-reduce: the summands' ranks become copies."""
        g = np.moveaxis(self.grid, -2, -1)
        return Dist.of_grid(g.reshape(*self.tiles, 1, self.partial * self.copies))

    def gather_groups(self, d: int) -> Groups:
        """The all-gather groups along dimension d, each in block order."""
        return _groups(np.moveaxis(self.grid, d, -1).reshape(-1, self.tiles[d]))

    def gathered(self, d: int) -> Dist:
        """After the all-gather along d: that dimension whole, its ranks copies."""
        g = np.moveaxis(self.grid, d, -1)
        tiles = list(self.tiles)
        t = tiles[d]
        tiles[d] = 1
        return Dist.of_grid(g.reshape(*tiles, self.partial, self.copies * t), self.reduction)

    def contains_dim(self, other: Dist, d: int) -> bool:
        """Every rank's block of self along d holds its block of `other` along d."""
        if self.tiles[d] == 1:
            return True
        if other.tiles[d] % self.tiles[d]:
            return False
        k = other.tiles[d] // self.tiles[d]
        return bool(np.array_equal(other.coords[:, d] // k, self.coords[:, d]))

    # -- changes of view ---------------------------------------------------------------
    def transposed(self, perm: Sequence[int]) -> Dist:
        return Dist.of_grid(self.grid.transpose(*perm, self.rank, self.rank + 1),
                            self.reduction)

    def with_tiles(self, tiles: Sequence[int]) -> Dist:
        """The same grid read with other tile dims (a reshape that keeps the order of the
        split dimensions)."""
        assert math.prod(tiles) == math.prod(self.tiles)
        return Dist.of_grid(self.grid.reshape(*tiles, self.partial, self.copies),
                            self.reduction)

    def to_layout(self) -> TileLayout:
        """The layout of a non-partial Dist, with its HLO sharding text."""
        assert self.partial == 1
        if all(t == 1 for t in self.tiles):
            return TileLayout()
        devs = ",".join(map(str, self.devices))
        if self.copies > 1:
            text = (f"{{devices=[{','.join(map(str, (*self.tiles, self.copies)))}]{devs} "
                    "last_tile_dim_replicate}")
        else:
            text = f"{{devices=[{','.join(map(str, self.tiles))}]{devs}}}"
        return TileLayout.tiled(self.tiles, self.devices, text)


def combine(n: int, axes: int, views: Sequence[tuple[Dist, Sequence[int]]]) -> Dist | None:
    """One Dist over an iteration space of `axes` axes that every view agrees with, or None.

    A view is a non-partial Dist and the axis of each of its dimensions. Along an axis the
    tile count is the one views that split it give (they must agree, rank by rank); a view
    that does not split it takes its block by a local slice. The result's cells (one per
    block of the space) must each hold the same number of ranks."""
    tiles = [1] * axes
    coords = np.zeros((n, axes), dtype=np.int64)
    for dist, dims in views:
        for d, a in enumerate(dims):
            t = dist.tiles[d]
            if t == 1:
                continue
            if tiles[a] == 1:
                tiles[a] = t
                coords[:, a] = dist.coords[:, d]
            elif tiles[a] != t or not np.array_equal(coords[:, a], dist.coords[:, d]):
                return None
    cells = np.ravel_multi_index(coords.T, tiles) if axes else np.zeros(n, dtype=np.int64)
    count = np.bincount(cells, minlength=math.prod(tiles))
    if count.min() != count.max():
        return None
    order = np.argsort(cells, kind="stable")
    return Dist.of_grid(order.reshape(*tiles, 1, int(count[0])))


def project(space: Dist, dims: Sequence[int | None]) -> Dist:
    """The Dist of a value whose dimension i runs along axis dims[i] of `space` (None: a
    dimension the space does not split); the other axes' ranks become copies."""
    keep = [a for a in dims if a is not None]
    rest = [a for a in range(space.rank) if a not in keep]
    g = space.grid.transpose(*keep, *rest, space.rank, space.rank + 1)
    tiles = [space.tiles[a] if a is not None else 1 for a in dims]
    moved = math.prod(space.tiles[a] for a in rest)
    g = np.moveaxis(g.reshape(*(space.tiles[a] for a in keep), moved, space.partial,
                               space.copies), len(keep), -1)
    return Dist.of_grid(g.reshape(*tiles, space.partial, space.copies * moved),
                        space.reduction)
