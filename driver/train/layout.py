"""Where each rank sits in a TP x PP x DP job, tensor-parallel ranks innermost.

    rank = pp_rank * (DP * TP) + dp_rank * TP + tp_rank

as Megatron and NxD lay ranks out: a TP group is consecutive ranks (inside one instance),
a DP group strides by TP, pipeline neighbours stride by DP x TP.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Coords:
    tp: int
    pp: int
    dp: int


@dataclass(frozen=True)
class RankLayout:
    """`tp` x `pp` x `dp` ranks (each >= 1)."""

    tp: int
    pp: int
    dp: int

    def __post_init__(self) -> None:
        if min(self.tp, self.pp, self.dp) < 1:
            raise ValueError(f"parallel sizes must be >= 1, got tp={self.tp} pp={self.pp} "
                             f"dp={self.dp}")

    @property
    def world_size(self) -> int:
        return self.tp * self.pp * self.dp

    def rank(self, tp: int, pp: int, dp: int) -> int:
        """The rank at coordinates (tp, pp, dp)."""
        if not (0 <= tp < self.tp and 0 <= pp < self.pp and 0 <= dp < self.dp):
            raise ValueError(f"coordinates tp={tp} pp={pp} dp={dp} outside {self}")
        return pp * (self.dp * self.tp) + dp * self.tp + tp

    def coords(self, rank: int) -> Coords:
        """(tp, pp, dp) of `rank`."""
        self._check(rank)
        pp, rest = divmod(rank, self.dp * self.tp)
        dp, tp = divmod(rest, self.tp)
        return Coords(tp=tp, pp=pp, dp=dp)

    def tp_group(self, rank: int) -> tuple[int, ...]:
        """The ranks sharing `rank`'s pipeline stage and data-parallel replica, by tp rank."""
        c = self.coords(rank)
        return tuple(self.rank(t, c.pp, c.dp) for t in range(self.tp))

    def dp_group(self, rank: int) -> tuple[int, ...]:
        """The ranks holding the same shard of the same stage, by dp rank."""
        c = self.coords(rank)
        return tuple(self.rank(c.tp, c.pp, d) for d in range(self.dp))

    def pp_group(self, rank: int) -> tuple[int, ...]:
        """The ranks of `rank`'s pipeline, by stage."""
        c = self.coords(rank)
        return tuple(self.rank(c.tp, p, c.dp) for p in range(self.pp))

    def stage_peer(self, rank: int, direction: int) -> int | None:
        """The rank of the next (+1) or previous (-1) pipeline stage with the same tp and
        dp rank; None past either end."""
        if direction not in (1, -1):
            raise ValueError(f"direction must be +1 or -1, got {direction}")
        c = self.coords(rank)
        stage = c.pp + direction
        return self.rank(c.tp, stage, c.dp) if 0 <= stage < self.pp else None

    def groups(self, kind: str) -> list[tuple[int, ...]]:
        """Every distinct group of `kind` ("tp", "dp" or "pp"), in order of first rank."""
        of = {"tp": self.tp_group, "dp": self.dp_group, "pp": self.pp_group}[kind]
        seen: dict[tuple[int, ...], None] = {}
        for r in range(self.world_size):
            seen.setdefault(of(r), None)
        return list(seen)

    def _check(self, rank: int) -> None:
        if not 0 <= rank < self.world_size:
            raise ValueError(f"rank {rank} outside a world of {self.world_size}")
