"""`RankLayout`: TP innermost, DP strides by TP, pipeline neighbours by DP x TP."""

from __future__ import annotations

import pytest

from nxcc.driver.train.layout import Coords, RankLayout


def test_formula_and_inverse() -> None:
    layout = RankLayout(tp=2, pp=3, dp=4)
    assert layout.world_size == 24
    for rank in range(24):
        c = layout.coords(rank)
        assert rank == c.pp * (4 * 2) + c.dp * 2 + c.tp
        assert layout.rank(c.tp, c.pp, c.dp) == rank
    assert layout.coords(13) == Coords(tp=1, pp=1, dp=2)


def test_groups_of_tp2_pp2_dp2() -> None:
    layout = RankLayout(2, 2, 2)
    assert layout.groups("tp") == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert layout.groups("dp") == [(0, 2), (1, 3), (4, 6), (5, 7)]
    assert layout.groups("pp") == [(0, 4), (1, 5), (2, 6), (3, 7)]
    assert layout.tp_group(5) == (4, 5) and layout.dp_group(5) == (5, 7)
    assert layout.stage_peer(1, +1) == 5 and layout.stage_peer(5, -1) == 1
    assert layout.stage_peer(5, +1) is None and layout.stage_peer(1, -1) is None


def test_every_rank_in_exactly_one_group_of_each_kind() -> None:
    layout = RankLayout(4, 2, 3)
    for kind, size in (("tp", 4), ("pp", 2), ("dp", 3)):
        groups = layout.groups(kind)
        assert all(len(g) == size for g in groups)
        assert sorted(r for g in groups for r in g) == list(range(layout.world_size))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="rank 8 outside a world of 8"):
        RankLayout(2, 2, 2).coords(8)
    with pytest.raises(ValueError, match=">= 1"):
        RankLayout(0, 1, 1)
    with pytest.raises(ValueError, match="direction"):
        RankLayout(1, 2, 1).stage_peer(0, 2)
