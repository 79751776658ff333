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
