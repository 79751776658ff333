"""The flat parameter layout: buckets padded for DP, ZeRO-1 shards, parameter views."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.driver.train.flat import FlatLayout


@pytest.mark.parametrize("dp", [1, 2, 3])
def test_buckets_shards_and_views(dp: int) -> None:
    shapes = [(3, 4), (5,), (2, 2), (7,)]
    lay = FlatLayout(shapes, dp, bucket_bytes=24)
    assert all(b.size % dp == 0 for b in lay.buckets)
    assert sum(b.size for b in lay.buckets) == lay.size >= lay.used == 28
    flat = np.zeros(lay.size, np.float32)
    for i, view in enumerate(lay.views(flat)):
        view[...] = i + 1
    assert float(flat.sum()) == 12 * 1 + 5 * 2 + 4 * 3 + 7 * 4  # padding stays zero
    assert [float(v.flat[0]) for v in lay.views(flat)] == [1.0, 2.0, 3.0, 4.0]
    rebuilt = np.zeros_like(flat)
    shards = [lay.shard(flat, d, True) for d in range(dp)]
    assert sum(s.size for s in shards) == lay.size
    for d, s in enumerate(shards):
        assert s.size == lay.shard_size(True)
        lay.unshard_into(rebuilt, s, d)
    np.testing.assert_array_equal(rebuilt, flat)
    assert lay.shard(flat, 0, False) is flat
