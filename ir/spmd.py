"""SPMD programs: one program run by N ranks, and how each rank's values sit in the global
ones.

An SPMD module (XLA's partitioned HLO: ``num_partitions=N``, collectives with replica
groups, parameters at their per-rank shapes) carries `Module.spmd`: the world it was
written for and the layout of every entry parameter and result over the ranks. A layout is
a `TileLayout`, the general form of XLA's tiled HloSharding on an N-dimensional device mesh
(unlike `ir.sharding.Sharding`, whose mesh has one axis in iota order):

- `tiles[d]` blocks along data dimension d; the tile assignment (`devices`, row-major over
  ``tiles + (copies,)``) says which rank holds which block; `copies` > 1 when every block
  is held by several ranks (HLO's ``last_tile_dim_replicate``);
- replicated: no tiles, every rank holds the whole value;
- `owner`: the value lives on one rank (HLO's ``{maximal device=k}``); every rank is given
  the whole input, the output is taken from the owner.

Blocks are equal: a global dimension must divide by its tile count (XLA pads uneven
dimensions; nxcc takes global shapes as the per-rank shape times the tiles).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class TileLayout:
    """A value's layout over the ranks; `text` is how it was written (HLO sharding syntax)."""

    tiles: tuple[int, ...] = ()
    devices: tuple[int, ...] = ()
    copies: int = 1
    owner: int | None = None
    text: str = "{replicated}"

    @property
    def is_replicated(self) -> bool:
        """Every rank holds the whole value (maximal counts: every rank is given it)."""
        return all(t == 1 for t in self.tiles)

    @property
    def num_devices(self) -> int:
        return len(self.devices)

    def check(self, world_size: int, rank: int | None = None) -> None:
        """ValueError unless the layout suits `world_size` ranks (and data of `rank` dims)."""
        if self.owner is not None and not 0 <= self.owner < world_size:
            raise ValueError(f"{self.text} places the value on device {self.owner}, outside "
                             f"the {world_size} ranks")
        if self.devices and sorted(self.devices) != list(range(world_size)):
            raise ValueError(f"{self.text} assigns devices {sorted(set(self.devices))}, not "
                             f"each of the {world_size} ranks once")
        if rank is not None and self.tiles and len(self.tiles) != rank:
            raise ValueError(f"{self.text} tiles {len(self.tiles)} dimensions, the value has "
                             f"{rank}")

    def coords(self, rank: int) -> tuple[int, ...]:
        """The block (index per data dimension) rank `rank` holds."""
        if not self.devices:
            return (0,) * len(self.tiles)
        grid = np.asarray(self.devices).reshape(*self.tiles, self.copies)
        where = np.argwhere(grid == rank)
        if where.size == 0:
            raise ValueError(f"rank {rank} is not in the tile assignment of {self.text}")
        return tuple(int(i) for i in where[0][:-1])

    def holders(self) -> dict[tuple[int, ...], int]:
        """Each block's first holder (lowest position in the tile assignment)."""
        if not self.devices:
            return {(0,) * len(self.tiles): 0 if self.owner is None else self.owner}
        grid = np.asarray(self.devices).reshape(*self.tiles, self.copies)
        return {tuple(int(i) for i in idx): int(grid[idx][0])
                for idx in np.ndindex(*self.tiles)}

    def local_shape(self, global_shape: tuple[int, ...]) -> tuple[int, ...]:
        """A rank's block shape; ValueError if a dimension does not divide."""
        if not self.tiles:
            return tuple(global_shape)
        for d, (n, t) in enumerate(zip(global_shape, self.tiles, strict=True)):
            if n % t:
                raise ValueError(f"{self.text}: dimension {d} of size {n} does not divide "
                                 f"into {t} blocks")
        return tuple(n // t for n, t in zip(global_shape, self.tiles, strict=True))

    def global_shape(self, local: tuple[int, ...]) -> tuple[int, ...]:
        if not self.tiles:
            return tuple(local)
        return tuple(n * t for n, t in zip(local, self.tiles, strict=True))

    def block(self, global_shape: tuple[int, ...], rank: int) -> tuple[slice, ...]:
        """The slices of the global value rank `rank` holds."""
        local = self.local_shape(global_shape)
        if not self.tiles:
            return tuple(slice(0, n) for n in global_shape)
        return tuple(slice(c * n, (c + 1) * n)
                     for c, n in zip(self.coords(rank), local, strict=True))

    def to_json(self) -> dict:
        out: dict = {"text": self.text}
        if self.tiles:
            out.update(tiles=list(self.tiles), devices=list(self.devices), copies=self.copies)
        if self.owner is not None:
            out["owner"] = self.owner
        return out

    @staticmethod
    def from_json(d: dict) -> TileLayout:
        return TileLayout(tuple(d.get("tiles", ())), tuple(d.get("devices", ())),
                          int(d.get("copies", 1)), d.get("owner"), d.get("text", ""))

    @staticmethod
    def tiled(tiles: tuple[int, ...], devices: tuple[int, ...], text: str) -> TileLayout:
        """Tiles over data dimensions; `devices` may hold a trailing replication factor."""
        n = math.prod(tiles)
        if not devices or len(devices) % n:
            raise ValueError(f"{text}: {len(devices)} devices for {n} blocks")
        return TileLayout(tuple(tiles), tuple(devices), len(devices) // n, None, text)


REPLICATED_LAYOUT = TileLayout()


@dataclass(frozen=True)
class SpmdValue:
    """An entry parameter or result of an SPMD program: its layout (None: none written,
    taken as replicated for inputs) and its per-rank shape."""

    layout: TileLayout | None
    local_shape: tuple[int, ...]

    @property
    def global_shape(self) -> tuple[int, ...]:
        return (self.layout or REPLICATED_LAYOUT).global_shape(self.local_shape)


@dataclass
class SpmdInfo:
    """The world an SPMD module was written for and its entry's layouts (see module doc).

    `num_partitions` and `replica_count` are as the program says (1 when it does not): rank
    r runs with partition_id r % P and replica_id r // P, where P is `num_partitions` when the
    program gives it, else the world size.
    """

    num_partitions: int = 1
    replica_count: int = 1
    params: list[SpmdValue] = field(default_factory=list)
    results: list[SpmdValue] = field(default_factory=list)

    @property
    def world_size(self) -> int | None:
        """The rank count the program was partitioned for, or None when it does not say."""
        n = self.num_partitions * self.replica_count
        return n if n > 1 else None


@dataclass
class MeshLayouts:
    """The shardings of a global program annotated for a mesh of `world_size` devices
    (JAX's lowered text): each entry parameter's and result's layout (None: none written).
    The mesh-partition pass turns such a module into an SPMD program for that world.
    `constraints`: values of the entry a sharding constraint places (HLO's Sharding
    custom-call), with their layouts. `lnc_notes`: what the one-axis shardings of `-lnc 2`
    could not keep (warned there)."""

    world_size: int
    params: list[TileLayout | None] = field(default_factory=list)
    results: list[TileLayout | None] = field(default_factory=list)
    lnc_notes: list[str] = field(default_factory=list)
    constraints: list[tuple[Any, TileLayout]] = field(default_factory=list)
