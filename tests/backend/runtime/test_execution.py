"""Execution settings: NEURON_RT_EXEC_TIMEOUT, NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS,
tensor info, bad inputs and loading from bytes."""

from __future__ import annotations

import time

import numpy as np
import pytest

from nxcc.backend.runtime.status import NrtError, NrtStatus

TRN1 = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge"}
FOREVER = {"n": np.array(2**31 - 1, np.int32)}


def n(value: int) -> dict[str, np.ndarray]:
    return {"n": np.array(value, np.int32)}


def test_timeout_stops_a_long_execution_and_the_runtime_stays_usable(start, spin) -> None:
    rt = start(NEURON_RT_EXEC_TIMEOUT="1", **TRN1)
    model = rt.load(spin)
    began = time.monotonic()
    with pytest.raises(NrtError) as err:
        rt.execute(model, FOREVER)  # a while loop of 2**31 iterations: hours
    took = time.monotonic() - began
    assert err.value.status == NrtStatus.TIMEOUT
    assert "NEURON_RT_EXEC_TIMEOUT=1" in str(err.value)
    assert 0.9 < took < 3.0
    assert int(rt.execute(model, n(1000))["count"]) == 1000
    with pytest.raises(NrtError) as err:  # and it times out again, on the same replica
        rt.execute(model, FOREVER)
    assert err.value.status == NrtStatus.TIMEOUT


def test_timeout_is_not_applied_to_executions_within_it(start, spin) -> None:
    rt = start(NEURON_RT_EXEC_TIMEOUT="2", **TRN1)
    model = rt.load(spin)
    assert int(rt.execute(model, n(20000))["count"]) == 20000


def test_async_is_disabled_by_default(start, spin) -> None:
    rt = start(**TRN1)
    model = rt.load(spin)
    with pytest.raises(NrtError) as err:
        rt.execute_async(model, n(1))
    assert err.value.status == NrtStatus.INVALID
    assert "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS" in str(err.value)


def test_async_in_flight_bound(start, spin) -> None:
    rt = start(NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS="2", NEURON_RT_EXEC_TIMEOUT="1",
               **TRN1)
    model = rt.load(spin, nc_count=2)
    slow = [rt.execute_async(model, FOREVER) for _ in range(2)]  # each runs into the timeout
    with pytest.raises(NrtError) as err:
        rt.execute_async(model, n(1))
    assert err.value.status == NrtStatus.QUEUE_FULL
    assert "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS=2" in str(err.value)
    for f in slow:
        assert isinstance(f.exception(timeout=20), NrtError)
        assert f.exception().status == NrtStatus.TIMEOUT
    done = [rt.execute_async(model, n(k)) for k in (5, 6)]
    assert [int(f.result(timeout=20)["count"]) for f in done] == [5, 6]


def test_async_runs_on_the_replicas_in_parallel(start, spin) -> None:
    rt = start(NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS="2", **TRN1)
    model = rt.load(spin, nc_count=2)
    futures = [rt.execute_async(model, n(k)) for k in (11, 12)]
    assert [int(f.result(timeout=20)["count"]) for f in futures] == [11, 12]
    assert sorted(model.history) == [0, 1]


def test_tensor_info_and_bad_inputs(start, spin) -> None:
    rt = start(**TRN1)
    model = rt.load(spin.read_bytes())  # bytes work as well as a path
    inputs, outputs = rt.tensor_info(model)
    assert [(i.name, i.dtype, i.shape) for i in inputs] == [("n", np.dtype(np.int32), ())]
    assert [o.name for o in outputs] == ["count"]
    with pytest.raises(NrtError) as err:
        rt.execute(model, {"n": np.array(1.0, np.float32)})
    assert err.value.status == NrtStatus.EXEC_BAD_INPUT
