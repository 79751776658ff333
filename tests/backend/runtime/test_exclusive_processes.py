"""NeuronCores are exclusive to a process across the host, until it exits or is killed."""

from __future__ import annotations

from nxcc.backend.runtime.cores import holders as core_holders
from nxcc.backend.runtime.status import NrtStatus
from nxcc.backend.runtime.topology import INSTANCES
from tests.backend.runtime.procs import holders, start_holder, start_holders

TRN1 = {"NXCC_INSTANCE_TYPE": "trn1.32xlarge"}


def test_overlapping_visible_cores_refused_until_the_first_exits() -> None:
    with holders() as started:
        first = start_holder(started, NEURON_RT_VISIBLE_CORES="0-3", **TRN1)
        assert first.ok and first.report["cores"] == [0, 1, 2, 3]
        second = start_holder(started, NEURON_RT_VISIBLE_CORES="2-5", **TRN1)
        assert not second.ok
        assert second.report["status"] == NrtStatus.LOAD_NOT_ENOUGH_NC
        msg = second.report["message"]
        assert "nc2-3" in msg and f"pid {first.report['pid']}" in msg
        assert "tests.backend.runtime.holder" in msg  # the holder's command
        first.release()
        third = start_holder(started, NEURON_RT_VISIBLE_CORES="2-5", **TRN1)
        assert third.ok and third.report["cores"] == [2, 3, 4, 5]


def test_cores_of_a_killed_process_are_free_again() -> None:
    with holders() as started:
        first = start_holder(started, NEURON_RT_VISIBLE_CORES="7", **TRN1)
        assert first.ok
        assert not start_holder(started, NEURON_RT_VISIBLE_CORES="6-7", **TRN1).ok
        first.kill()  # SIGKILL: the runtime cleans nothing up
        again = start_holder(started, NEURON_RT_VISIBLE_CORES="6-7", **TRN1)
        assert again.ok and again.report["cores"] == [6, 7]


def test_five_num_cores_3_processes_fit_on_16_cores_and_a_sixth_fails() -> None:
    # The seed's example: a 16-NeuronCore inf1.6xlarge, NEURON_RT_NUM_CORES=3 five times.
    env = {"NXCC_INSTANCE_TYPE": "inf1.6xlarge", "NEURON_RT_NUM_CORES": "3"}
    assert INSTANCES["inf1.6xlarge"].logical_cores(1) == 16
    with holders() as started:
        five = start_holders(started, [env] * 5)
        assert all(h.ok for h in five), [h.report for h in five]
        taken = sorted(c for h in five for c in h.report["cores"])
        assert taken == list(range(15))  # disjoint, contiguous each
        for h in five:
            cores = h.report["cores"]
            assert cores == list(range(cores[0], cores[0] + 3))
        sixth = start_holder(started, **env)
        assert not sixth.ok
        assert sixth.report["status"] == NrtStatus.LOAD_NOT_ENOUGH_NC
        assert "NEURON_RT_NUM_CORES=3" in sixth.report["message"]
        assert "free: nc15" in sixth.report["message"]


def test_num_cores_never_takes_cores_another_process_holds(runtime_env) -> None:
    with holders() as started:
        a = start_holder(started, NEURON_RT_VISIBLE_CORES="1", **TRN1)
        b = start_holder(started, NEURON_RT_NUM_CORES="3", **TRN1)
        assert a.ok and b.ok
        assert b.report["cores"] == [2, 3, 4]  # nc0 alone is too small, nc1 is a's
        held = core_holders(runtime_env, INSTANCES["trn1.32xlarge"])
        assert {p: h.pid for p, h in held.items()} == {
            1: a.report["pid"], 2: b.report["pid"], 3: b.report["pid"], 4: b.report["pid"]}
