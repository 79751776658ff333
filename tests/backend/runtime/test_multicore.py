"""The shared-memory communicator and the one-thread-per-core runner."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nxcc.backend.runtime.blas_threads import limit_this_thread
from nxcc.backend.runtime.executor import ExecutionStopped
from nxcc.backend.runtime.multicore import CollectiveMismatch, SharedMemoryGroup, run_cores


def run(n: int, per_rank) -> list:
    group = SharedMemoryGroup(n)
    return run_cores([lambda k=k: per_rank(group.endpoint(k), k) for k in range(n)], group)


def data(k: int, shape=(4, 6)) -> np.ndarray:
    return (np.arange(np.prod(shape), dtype=np.float32).reshape(shape) + 100 * k)


def test_all_reduce_all_gather_reduce_scatter_all_to_all() -> None:
    groups = {"replica_groups": ((0, 1, 2, 3),)}

    def body(ep, k):
        x = data(k)
        return [ep.collective("all_reduce", [x], {"reduction": "sum", **groups})[0],
                ep.collective("all_gather", [x], {"dimension": 1, **groups})[0],
                ep.collective("reduce_scatter", [x], {"dimension": 0, "reduction": "max",
                                                      **groups})[0],
                ep.collective("all_to_all", [x], {"split_dimension": 0, "concat_dimension": 1,
                                                  **groups})[0]]

    out = run(4, body)
    xs = [data(k) for k in range(4)]
    for k in range(4):
        np.testing.assert_array_equal(out[k][0], sum(xs))
        np.testing.assert_array_equal(out[k][1], np.concatenate(xs, axis=1))
        np.testing.assert_array_equal(out[k][2], np.maximum.reduce(xs)[k:k + 1])
        np.testing.assert_array_equal(out[k][3], np.concatenate([x[k:k + 1] for x in xs], 1))


def test_replica_groups_and_permute() -> None:
    def body(ep, k):
        x = data(k, (2,))
        return [ep.collective("all_reduce", [x], {"reduction": "sum",
                                                  "replica_groups": ((0, 1), (2, 3))})[0],
                ep.collective("collective_permute", [x],
                              {"source_target_pairs": ((0, 1), (1, 0), (2, 3))})[0]]

    out = run(4, body)
    np.testing.assert_array_equal(out[0][0], data(0, (2,)) + data(1, (2,)))
    np.testing.assert_array_equal(out[3][0], data(2, (2,)) + data(3, (2,)))
    np.testing.assert_array_equal(out[0][1], data(1, (2,)))
    np.testing.assert_array_equal(out[3][1], data(2, (2,)))
    np.testing.assert_array_equal(out[2][1], np.zeros(2, np.float32))  # no one sends to 2


def test_a_failing_core_does_not_hang_the_others() -> None:
    def body(ep, k):
        if k == 1:
            raise ValueError("core 1 broke")
        return ep.collective("all_reduce", [data(k)], {"reduction": "sum"})

    with pytest.raises(ValueError, match="core 1 broke"):
        run(2, body)


def test_disagreeing_programs_fail_instead_of_hanging() -> None:
    def body(ep, k):
        out = ep.collective("all_reduce", [data(k)], {"reduction": "sum"})
        if k == 0:
            out = ep.collective("all_reduce", out, {"reduction": "sum"})
        return out

    with pytest.raises(CollectiveMismatch, match="abandoned"):
        run(2, body)


def test_a_stopped_core_reports_the_stop_and_the_group_is_reusable() -> None:
    group = SharedMemoryGroup(2)

    def stopped(k):
        def work():
            if k == 0:
                raise ExecutionStopped("deadline")
            return group.endpoint(k).collective("all_reduce", [data(k)], {"reduction": "sum"})
        return work

    with pytest.raises(ExecutionStopped):
        run_cores([stopped(0), stopped(1)], group)
    fine = [lambda k=k: group.endpoint(k).collective("all_reduce", [data(k)],
                                                      {"reduction": "sum"}) for k in range(2)]
    out = run_cores(fine, group)
    np.testing.assert_array_equal(out[1][0], data(0) + data(1))


def test_cores_run_on_their_own_threads() -> None:
    names = run(2, lambda ep, k: [threading.current_thread().name])
    assert names[1] == ["nxcc-core1"] and names[0] != names[1]


def test_blas_thread_limit_is_per_thread_and_restored() -> None:
    with limit_this_thread(1):
        a = np.ones((64, 64), np.float32)
        assert float((a @ a)[0, 0]) == 64.0
