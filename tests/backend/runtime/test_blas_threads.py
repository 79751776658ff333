"""BLAS threads are back exactly where they were after limited regions and -lnc 2 runs."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.blas_threads import blas_threads, limit_process, limit_this_thread

pytestmark = pytest.mark.skipif(blas_threads() is None,
                                reason="no OpenBLAS thread control in this process")


def _region(k: int, opened: list[threading.Event], close: list[threading.Event],
            seen: list[int | None]) -> None:
    with limit_process(1), limit_this_thread(1):
        opened[k].set()
        close[k].wait(10)
        seen[k] = blas_threads()


def test_regions_of_two_threads_closed_in_either_order_restore_the_count() -> None:
    before = blas_threads()
    for first_out in (0, 1):
        opened = [threading.Event(), threading.Event()]
        close = [threading.Event(), threading.Event()]
        seen: list[int | None] = [None, None]
        workers = [threading.Thread(target=_region, args=(k, opened, close, seen))
                   for k in range(2)]
        for w in workers:
            w.start()
        for e in opened:
            assert e.wait(10)
        close[first_out].set()
        workers[first_out].join(10)
        close[1 - first_out].set()
        workers[1 - first_out].join(10)
        assert seen == [1, 1]
        assert blas_threads() == before


def test_nested_limits_take_the_smallest_and_unwind() -> None:
    before = blas_threads()
    with limit_process(2):
        with limit_process(1):
            assert blas_threads() == 1
        assert blas_threads() == min(2, before if before else 2)
    assert blas_threads() == before


def test_an_lnc2_run_in_process_leaves_the_count_as_it_was(start, spin_trn2_lnc2: Path
                                                          ) -> None:
    before = blas_threads()
    rt = start(NXCC_INSTANCE_TYPE="trn2.48xlarge")
    model = rt.load(str(spin_trn2_lnc2))
    assert len(model.replicas[0].model.executors) == 2  # two cores, so run_cores limits
    for _ in range(40):  # the old code left the count at 1 in about one process in three
        rt.execute(model, {"n": np.array(50, np.int32)})
    assert blas_threads() == before
