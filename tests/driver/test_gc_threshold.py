"""The compile's collector thresholds are raised inside the block and restored after."""

from __future__ import annotations

import gc

import pytest

from nxcc.driver.gc_threshold import COMPILE_THRESHOLDS, compile_gc


def test_thresholds_raised_then_restored_even_on_error() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), compile_gc():
        assert gc.get_threshold() == tuple(max(a, b) for a, b in
                                           zip(COMPILE_THRESHOLDS, before, strict=True))
        assert gc.get_threshold()[0] >= COMPILE_THRESHOLDS[0] > before[0]
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
