"""The squared gradient norm a rank contributes: float64 sums whose bits do not depend on
the threads."""

from __future__ import annotations

import numpy as np
import pytest

from nxcc.driver.train import grad_sync


@pytest.mark.parametrize("threads", [1, 2, 5])
def test_the_gradient_norm_is_the_float64_sum_whatever_the_threads(
        monkeypatch: pytest.MonkeyPatch, threads: int) -> None:
    """The counted squares summed in float64, chunk by chunk in order: the same bits on any
    number of threads; no mask counts every element."""
    monkeypatch.setattr(grad_sync, "NORM_CHUNK", 16)  # 7 chunks, the last of 4
    rng = np.random.default_rng(1)
    g = rng.standard_normal(100).astype(np.float32)
    mask = (rng.random(100) < 0.7).astype(np.float32)
    wide = g.astype(np.float64)
    one = grad_sync.norm_contribution(g, mask, 1)
    assert grad_sync.norm_contribution(g, mask, threads) == one
    assert one == pytest.approx(float(np.sum(wide * wide * mask)), rel=1e-14)
    assert grad_sync.norm_contribution(g, None, threads) == \
        grad_sync.norm_contribution(g, np.ones(100, np.float32), 1)


def test_chunks_counted_whole_skip_the_mask_with_the_same_bits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk whose every element counts is summed without its product with the mask:
    the bits of each chunk's float64 dot with the mask applied, added in order."""
    monkeypatch.setattr(grad_sync, "NORM_CHUNK", 16)
    rng = np.random.default_rng(2)
    g = rng.standard_normal(100).astype(np.float32)
    mask = np.ones(100, np.float32)
    mask[37:40] = 0.0  # chunk 2 mixed, the others whole
    counted = grad_sync.NormMask(mask)
    assert counted.whole.tolist() == [True, True, False, True, True, True, True]
    want = 0.0
    for start in range(0, 100, 16):
        wide = g[start:start + 16].astype(np.float64)
        want += float(np.dot(wide * mask[start:start + 16], wide))
    assert grad_sync.norm_contribution(g, counted, 2) == want
