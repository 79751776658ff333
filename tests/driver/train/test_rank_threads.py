"""Ranks that are threads of one process share the BLAS's threads while they run, and the
count is back as it was once they are done."""

from __future__ import annotations

import pytest

from nxcc.backend.runtime.blas_threads import blas_thread_count
from nxcc.backend.runtime.channels import LocalChannels
from nxcc.driver.train.ranks import run_rank_threads

COUNT = blas_thread_count()


@pytest.mark.skipif(COUNT is None or COUNT < 2,
                    reason="needs a BLAS of at least two threads whose count nxcc reads")
def test_two_ranks_take_half_the_blas_threads_each() -> None:
    assert COUNT is not None
    seen = run_rank_threads([0, 1], LocalChannels(10), lambda _: blas_thread_count())
    assert seen == [COUNT // 2, COUNT // 2]
    assert run_rank_threads([0], LocalChannels(10), lambda _: blas_thread_count()) == [COUNT]
    assert blas_thread_count() == COUNT
