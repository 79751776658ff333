"""libnrt's `nrt_register_async_exec_callback`: each asynchronous execution posts its status
to the registered callback, or to the default one, which logs it."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from nxcc.backend.runtime.status import NrtError, NrtStatus

TRN1 = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge", "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": "2"}


def n(value: int) -> dict[str, np.ndarray]:
    return {"n": np.array(value, np.int32)}


def test_the_callback_gets_each_completion_before_its_future(start, spin) -> None:
    rt = start(**TRN1)
    model = rt.load(spin, nc_count=2)
    posted: list[tuple] = []

    def callback(params, model_id, vnc, job_id, status):
        posted.append((params, model_id, vnc, job_id, status, threading.current_thread().name))

    rt.nrt_register_async_exec_callback(callback, "my params")
    futures = [rt.execute_async(model, n(k)) for k in (3, 4)]
    assert [int(f.result(timeout=20)["count"]) for f in futures] == [3, 4]
    assert len(posted) == 2  # called on the execution thread, before the future was done
    assert {p[0] for p in posted} == {"my params"} and {p[1] for p in posted} == {model.id}
    assert sorted(p[2] for p in posted) == [0, 1]  # the logical core each one ran on
    assert len({p[3] for p in posted}) == 2 and {p[4] for p in posted} == {NrtStatus.SUCCESS}
    assert all(p[5].startswith("nrt-async") for p in posted)


def test_a_failed_execution_posts_its_status(start, spin) -> None:
    rt = start(NEURON_RT_EXEC_TIMEOUT="1", **TRN1)
    model = rt.load(spin)
    posted = []
    rt.register_async_exec_callback(lambda *args: posted.append(args))
    future = rt.execute_async(model, n(2**31 - 1))  # runs into the timeout
    assert future.exception(timeout=20).status == NrtStatus.TIMEOUT
    assert [p[4] for p in posted] == [NrtStatus.TIMEOUT] and posted[0][0] is None


def test_the_default_callback_logs_the_status(start, spin, capfd) -> None:
    rt = start(NEURON_RT_LOG_LEVEL_NRT="INFO", **TRN1)
    model = rt.load(spin)
    rt.execute_async(model, n(5)).result(timeout=20)
    lines = [x for x in capfd.readouterr().err.splitlines() if "async execution" in x]
    assert len(lines) == 1 and " INFO NRT:" in lines[0]
    assert f"of model {model.id} on nc0 completed: SUCCESS (0)" in lines[0]


def test_registering_replaces_and_none_restores_the_default(start, spin, capfd) -> None:
    rt = start(**TRN1)
    model = rt.load(spin)
    first, second = [], []
    rt.register_async_exec_callback(lambda *a: first.append(a))
    rt.register_async_exec_callback(lambda *a: second.append(a))
    rt.execute_async(model, n(1)).result(timeout=20)
    assert (len(first), len(second)) == (0, 1)
    rt.register_async_exec_callback(None)
    rt.execute_async(model, n(1)).result(timeout=20)
    assert len(second) == 1


def test_a_failing_callback_is_logged_and_the_result_stands(start, spin, capfd) -> None:
    rt = start(**TRN1)
    model = rt.load(spin)

    def broken(*args):
        raise ValueError("callback bug")

    rt.register_async_exec_callback(broken)
    assert int(rt.execute_async(model, n(7)).result(timeout=20)["count"]) == 7
    err = capfd.readouterr().err
    assert "ERROR NRT:" in err and "callback bug" in err


def test_a_callback_must_be_callable(start) -> None:
    rt = start(**TRN1)
    with pytest.raises(NrtError) as err:
        rt.register_async_exec_callback(42)  # type: ignore[arg-type]
    assert err.value.status == NrtStatus.INVALID
