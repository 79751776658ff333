"""Dist: the groups of collectives over mesh axes, combining placements, reshape runs."""

from __future__ import annotations

import numpy as np

from nxcc.ir.sharding_notation.hlo_sharding import parse_sharding
from nxcc.ir.sharding_notation.tile_layout import to_layout
from nxcc.passes.mesh_partition.dist import Dist, combine, project
from nxcc.passes.mesh_partition.rules import _reshape_groups, gathers


def dist(text: str, rank: int) -> Dist:
    layout, why = to_layout(parse_sharding(text), rank, text)
    assert why is None
    return Dist.of_layout(layout, rank, 8)


def test_columns_over_the_tp_axis_of_a_2x4_mesh() -> None:
    """devices d = 4*dp + tp; w1 split by columns over tp, replicated over dp."""
    w1 = dist("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2)
    assert (w1.tiles, w1.copies) == ((1, 4), 2)
    assert list(w1.coords[:, 1]) == [0, 1, 2, 3, 0, 1, 2, 3]
    assert w1.gather_groups(1) == ((0, 1, 2, 3), (4, 5, 6, 7))
    assert w1.gathered(1).is_replicated


def test_partial_sum_reduces_over_its_summands() -> None:
    grid = np.arange(8).reshape(2, 4, 1)  # rows over dp, summands over tp
    d = Dist.of_grid(grid)
    assert (d.tiles, d.partial, d.copies) == ((2,), 4, 1)
    assert d.reduce_groups() == ((0, 1, 2, 3), (4, 5, 6, 7))
    r = d.reduced()
    assert (r.partial, r.copies) == (1, 4) and r == dist(
        "{devices=[2,4]<=[8] last_tile_dim_replicate}", 1)


def test_combine_takes_the_finer_split_and_refuses_disagreement() -> None:
    rows = dist("{devices=[2,1,4]<=[8] last_tile_dim_replicate}", 2)
    cols = dist("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2)
    both = combine(8, 2, [(rows, (0, 1)), (cols, (0, 1))])
    assert both is not None and (both.tiles, both.copies) == ((2, 4), 1)
    assert gathers(rows, both) == [] and gathers(cols, both) == []
    other = dist("{devices=[2,1,4]0,4,1,5,2,6,3,7 last_tile_dim_replicate}", 2)
    assert combine(8, 2, [(rows, (0, 1)), (other, (0, 1))]) is None
    assert gathers(other, rows) == [0]


def test_project_drops_axes_into_copies() -> None:
    space = Dist.of_grid(np.arange(8).reshape(2, 4, 1, 1))
    lhs = project(space, [0, None])
    assert (lhs.tiles, lhs.copies) == ((2, 1), 4)
    assert lhs.to_layout().text == "{devices=[2,1,4]0,1,2,3,4,5,6,7 last_tile_dim_replicate}"


def test_reshape_runs() -> None:
    assert _reshape_groups((4, 8, 96), (4, 8, 3, 4, 8)) == [([0], [0]), ([1], [1]),
                                                             ([2], [2, 3, 4])]
    assert _reshape_groups((32,), (1, 32)) == [([0], [0, 1])]
    assert _reshape_groups((1, 32), (32,)) == [([0, 1], [0])]
