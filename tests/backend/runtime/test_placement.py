"""The placement seed's examples, on a machine with 8 NeuronCores (trn2.3xlarge at LNC=1),
checking which core each model was loaded to and which core each execution ran on."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nxcc.backend.runtime.placement import multicore_context, neuron_cores_context
from nxcc.backend.runtime.status import NrtError, NrtStatus

EIGHT = {"NXCC_INSTANCE_TYPE": "trn2.3xlarge", "NEURON_LOGICAL_NC_CONFIG": "1"}
N = {"n": np.array(3, np.int32)}


def run(rt, model, times: int) -> list[int]:
    for _ in range(times):
        assert int(rt.execute(model, N)["count"]) == 3
    return list(model.history)[-times:]


def test_default(start, spin_trn2) -> None:
    rt = start(**EIGHT)
    assert rt.cores == tuple(range(8))  # the process owns every core
    m0 = rt.load(spin_trn2)
    m1 = rt.load(spin_trn2)
    assert (m0.cores, m1.cores) == ([0], [1])
    assert run(rt, m0, 2) == [0, 0] and run(rt, m1, 1) == [1]


def test_num_cores_2(start, spin_trn2) -> None:
    rt = start(NEURON_RT_NUM_CORES="2", **EIGHT)
    assert rt.cores == (0, 1)
    m0, m1 = rt.load(spin_trn2), rt.load(spin_trn2)
    assert (m0.cores, m1.cores) == ([0], [1])
    m2 = rt.load(spin_trn2)  # every core has a model: back to the least used, nc0
    assert m2.cores == [0]


def test_visible_cores_4_5(start, spin_trn2) -> None:
    rt = start(NEURON_RT_VISIBLE_CORES="4-5", **EIGHT)
    m0, m1 = rt.load(spin_trn2), rt.load(spin_trn2)
    assert (m0.cores, m1.cores) == ([4], [5])
    assert run(rt, m1, 2) == [5, 5]


def test_multiple_processes_num_cores_2(start, spin_trn2) -> None:
    first = start(NEURON_RT_NUM_CORES="2", **EIGHT)
    second = start(NEURON_RT_NUM_CORES="2", **EIGHT)
    assert (first.cores, second.cores) == ((0, 1), (2, 3))
    assert [second.load(spin_trn2).cores for _ in range(2)] == [[2], [3]]


def test_manual_core_selection(start, spin_trn2) -> None:
    rt = start(NEURON_RT_NUM_CORES="4", **EIGHT)
    with neuron_cores_context(start_nc=3):
        m0 = rt.load(spin_trn2)
    with neuron_cores_context(start_nc=0, nc_count=2):
        m1 = rt.load(spin_trn2)
    assert m0.cores == [3]
    assert m1.cores == [0, 1]  # replicas
    assert run(rt, m0, 2) == [3, 3]
    assert run(rt, m1, 3) == [0, 1, 0]


def test_automatic_multicore(start, spin_trn2) -> None:
    rt = start(NEURON_RT_NUM_CORES="8", **EIGHT)
    with multicore_context():
        m0 = rt.load(spin_trn2)
    assert m0.cores == list(range(8))
    assert run(rt, m0, 10) == [0, 1, 2, 3, 4, 5, 6, 7, 0, 1]


def test_load_arguments_match_the_contexts(start, spin_trn2) -> None:
    rt = start(NEURON_RT_VISIBLE_CORES="2-5", **EIGHT)
    assert rt.load(spin_trn2, start_nc=1).cores == [3]  # relative to the process's cores
    assert rt.load(spin_trn2, start_nc=2, nc_count=2).cores == [4, 5]
    with pytest.raises(NrtError) as err:
        rt.load(spin_trn2, start_nc=3, nc_count=2)
    assert err.value.status == NrtStatus.LOAD_NOT_ENOUGH_NC
    assert "owns nc2-5" in str(err.value)


def test_contexts_are_thread_local(start, spin_trn2) -> None:
    rt = start(**EIGHT)
    seen = {}

    def other_thread() -> None:
        seen["m"] = rt.load(spin_trn2)

    with neuron_cores_context(start_nc=6):
        t = threading.Thread(target=other_thread)
        t.start()
        t.join()
        here = rt.load(spin_trn2)
    assert here.cores == [6] and seen["m"].cores == [0]


def test_unload_frees_the_core_for_the_next_load(start, spin_trn2) -> None:
    rt = start(NEURON_RT_NUM_CORES="2", **EIGHT)
    m0, m1 = rt.load(spin_trn2), rt.load(spin_trn2)
    rt.unload(m0)
    assert rt.load(spin_trn2).cores == [0]
    with pytest.raises(NrtError) as err:
        rt.execute(m0, N)
    assert err.value.status == NrtStatus.INVALID_HANDLE
    assert m1.cores == [1]


def test_replica_count_must_be_a_multiple(start, spin_trn2) -> None:
    rt = start(**EIGHT)
    with pytest.raises(NrtError) as err:
        rt.load(spin_trn2, start_nc=0, nc_count=0)
    assert err.value.status == NrtStatus.INVALID


def test_replicated_model_is_safe_from_many_threads(start, spin_trn2) -> None:
    rt = start(NEURON_RT_NUM_CORES="4", **EIGHT)
    with multicore_context():
        model = rt.load(spin_trn2)
    errors: list[BaseException] = []
    results: list[int] = []
    lock = threading.Lock()

    def worker(k: int) -> None:
        try:
            for i in range(6):
                n = 200 + 10 * k + i
                out = rt.execute(model, {"n": np.array(n, np.int32)})
                with lock:
                    results.append(int(out["count"]) - n)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors and results == [0] * 48
    used = list(model.history)
    assert sorted(set(used)) == [0, 1, 2, 3] and all(used.count(c) == 12 for c in range(4))
