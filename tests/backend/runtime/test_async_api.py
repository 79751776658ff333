"""The Python API's asynchronous execution: `Model.execute_async` futures, and the process's
status callback, `nxcc.register_async_exec_callback` (libnrt's
`nrt_register_async_exec_callback`), with the default callback that logs the status."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import nxcc
from nxcc.backend.runtime.status import NrtError, NrtStatus

ASYNC = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge", "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS": "2"}


def n(value: int) -> dict[str, np.ndarray]:
    return {"n": np.array(value, np.int32)}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The async variables set; the process's callback back to the default afterwards."""
    for name, value in ASYNC.items():
        monkeypatch.setenv(name, value)
    yield
    nxcc.register_async_exec_callback(None)


@pytest.mark.usefixtures("env")
def test_futures_and_the_callback_registered_before_the_load(spin) -> None:
    posted: list[tuple] = []
    nxcc.register_async_exec_callback(lambda *args: posted.append(args), {"mine": 1})
    with nxcc.load(spin, nc_count=2) as model:
        futures = [model.execute_async(**n(k)) for k in (5, 6)]
        results = [f.result(timeout=20) for f in futures]
        ids = {model.handle.id}
    assert [list(r) for r in results] == [["count"], ["count"]]
    assert [int(r["count"]) for r in results] == [5, 6]
    assert len(posted) == 2 and {p[0]["mine"] for p in posted} == {1}
    assert {p[1] for p in posted} == ids and sorted(p[2] for p in posted) == [0, 1]
    assert {p[4] for p in posted} == {NrtStatus.SUCCESS}


@pytest.mark.usefixtures("env")
def test_a_registration_reaches_the_open_runtime_and_none_restores_the_default(
        spin, monkeypatch, capfd) -> None:
    monkeypatch.setenv("NEURON_RT_LOG_LEVEL_NRT", "INFO")
    posted: list[tuple] = []
    with nxcc.load(spin) as model:
        nxcc.register_async_exec_callback(lambda *args: posted.append(args))
        model.execute_async(**n(2)).result(timeout=20)
        assert len(posted) == 1
        capfd.readouterr()
        nxcc.register_async_exec_callback(None)
        model.execute_async(**n(3)).result(timeout=20)
        assert len(posted) == 1
        lines = [x for x in capfd.readouterr().err.splitlines() if "async execution" in x]
        assert len(lines) == 1 and " INFO NRT:" in lines[0]
        assert f"of model {model.handle.id} on nc0 completed: SUCCESS (0)" in lines[0]


@pytest.mark.usefixtures("env")
def test_a_failed_execution_fails_its_future_after_posting(spin, monkeypatch) -> None:
    monkeypatch.setenv("NEURON_RT_EXEC_TIMEOUT", "1")
    posted: list[NrtStatus] = []
    nxcc.register_async_exec_callback(lambda *args: posted.append(args[4]))
    with nxcc.load(spin) as model:
        error = model.execute_async(**n(2**31 - 1)).exception(timeout=30)  # runs into the timeout
    assert isinstance(error, NrtError) and error.status == NrtStatus.TIMEOUT
    assert posted == [NrtStatus.TIMEOUT]


def test_refusals(spin, monkeypatch) -> None:
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "trn1.2xlarge")
    with pytest.raises(NrtError) as err:
        nxcc.register_async_exec_callback("not callable")  # type: ignore[arg-type]
    assert err.value.status == NrtStatus.INVALID
    with nxcc.load(spin) as model:  # NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS unset: 0
        with pytest.raises(NrtError, match="asynchronous execution is disabled"):
            model.execute_async(**n(1))
    with pytest.raises(NrtError) as err:
        model.execute_async(**n(1))
    assert err.value.status == NrtStatus.INVALID_HANDLE
