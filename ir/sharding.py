"""Sharding: how a value is laid out over the physical cores of a logical core (or ranks).

Modelled on XLA's HloSharding, on a one-dimensional mesh of `n` devices in iota order
(device k is partition k):

=================================  =========================================================
text (after the value's type)      meaning
=================================  =========================================================
``sharding<replicated>``           every device holds the whole value (HLO ``{replicated}``)
``sharding<[2,1]>``                dimension 0 is cut into 2 equal blocks, device k holds
                                   block k (HLO ``{devices=[2,1]0,1}``)
``sharding<[1,1,2] partial sum>``  every device holds a full-shaped piece and the value is
                                   the sum of the pieces: a reduction still pending. The
                                   extra last entry is the number of pieces, as in HLO's
                                   ``last_tile_dims``. Reductions: sum, prod, max, min, and, or.
=================================  =========================================================

Contract: at most one dimension is tiled (the mesh has one axis) and a partial sharding
tiles no data dimension. A value's `sharding` is None until a sharding pass sets it. The
partitioned program keeps each value's *global* sharding on its per-core (local) value, so
``%x: f32[2,16] sharding<[2,1]>`` is core k's block of a global f32[4,16].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

REDUCTIONS = ("sum", "prod", "max", "min", "and", "or")


@dataclass(frozen=True)
class Sharding:
    """A sharding; build with `replicated()`, `split(rank, dim, n)` or `partial(rank, n)`.

    `tiles` is empty for a replicated value; else one tile count per dimension, plus the
    number of pieces as a last entry when `reduction` is set (a partial value).
    """

    tiles: tuple[int, ...] = ()
    reduction: str | None = None

    def __post_init__(self) -> None:
        tiles = tuple(int(t) for t in self.tiles)
        object.__setattr__(self, "tiles", tiles)
        if any(t < 1 for t in tiles):
            raise ValueError(f"sharding tiles must be >= 1, got {list(tiles)}")
        if self.reduction is not None:
            if self.reduction not in REDUCTIONS:
                raise ValueError(f"partial sharding reduction {self.reduction!r} is not one of "
                                 f"{', '.join(REDUCTIONS)}")
            if not tiles or any(t != 1 for t in tiles[:-1]):
                raise ValueError(f"a partial sharding tiles no data dimension: "
                                 f"[{','.join(map(str, tiles))}] partial {self.reduction}")
        elif sum(1 for t in tiles if t > 1) > 1:
            raise ValueError(f"sharding [{','.join(map(str, tiles))}] tiles several dimensions; "
                             "the device mesh has one axis")

    # construction

    @staticmethod
    def replicated() -> Sharding:
        return REPLICATED

    @staticmethod
    def split(rank: int, dim: int, n: int) -> Sharding:
        """Dimension `dim` of a rank-`rank` value cut into `n` blocks."""
        if not 0 <= dim < rank:
            raise ValueError(f"cannot split dimension {dim} of a rank-{rank} value")
        if n == 1:
            return REPLICATED
        return Sharding(tuple(n if d == dim else 1 for d in range(rank)))

    @staticmethod
    def partial(rank: int, n: int, reduction: str = "sum") -> Sharding:
        """`n` full-shaped pieces whose `reduction` is the value."""
        return Sharding((1,) * rank + (n,), reduction)

    # queries

    @property
    def is_replicated(self) -> bool:
        """True when every device holds the whole value (including all-ones tiles)."""
        return self.reduction is None and all(t == 1 for t in self.tiles)

    @property
    def is_partial(self) -> bool:
        return self.reduction is not None

    @property
    def split_dim(self) -> int | None:
        """The tiled dimension, or None (replicated or partial)."""
        if self.reduction is not None:
            return None
        for d, t in enumerate(self.tiles):
            if t > 1:
                return d
        return None

    @property
    def num_devices(self) -> int:
        """Devices the sharding spreads over (1 when replicated)."""
        return math.prod(self.tiles) if self.tiles else 1

    def normalized(self) -> Sharding:
        """All-ones tiles -> `replicated()`; otherwise self."""
        return REPLICATED if self.is_replicated else self

    def check(self, shape: tuple[int, ...]) -> None:
        """ValueError unless this sharding fits a global value of `shape`."""
        if not self.tiles:
            return
        rank = len(self.tiles) - (1 if self.reduction else 0)
        if rank != len(shape):
            raise ValueError(f"{self} has {rank} dimensions, the value has {len(shape)}")
        for d, t in enumerate(self.tiles[:rank]):
            if shape[d] % t:
                raise ValueError(f"{self}: dimension {d} of size {shape[d]} does not divide "
                                 f"into {t} tiles")

    def local_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The per-device shape of a global value of `shape`."""
        d = self.split_dim
        if d is None:
            return tuple(shape)
        out = list(shape)
        out[d] //= self.tiles[d]
        return tuple(out)

    def global_shape(self, local: tuple[int, ...]) -> tuple[int, ...]:
        """The global shape of a value whose per-device shape is `local`."""
        d = self.split_dim
        if d is None:
            return tuple(local)
        out = list(local)
        out[d] *= self.tiles[d]
        return tuple(out)

    def block(self, shape: tuple[int, ...], device: int) -> tuple[tuple[int, int], ...]:
        """[start, stop) per dimension of the block of the global `shape` device holds."""
        d = self.split_dim
        spans = [(0, s) for s in shape]
        if d is not None:
            size = shape[d] // self.tiles[d]
            k = device % self.tiles[d]
            spans[d] = (k * size, (k + 1) * size)
        return tuple(spans)

    def __str__(self) -> str:
        if self.is_replicated and self.reduction is None:
            return "sharding<replicated>"
        body = "[" + ",".join(str(t) for t in self.tiles) + "]"
        if self.reduction is not None:
            body += f" partial {self.reduction}"
        return f"sharding<{body}>"


REPLICATED = Sharding()
