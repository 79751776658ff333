"""Which cores a process takes: default, NEURON_RT_NUM_CORES, NEURON_RT_VISIBLE_CORES, LNC.

Two runtimes in one process lock the same files through different descriptors, so they
exclude each other exactly as two processes do (the process tests show the real thing).
"""

from __future__ import annotations

import os

import pytest

from nxcc.backend.runtime.cores import holders
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import INSTANCES


def test_default_takes_every_core_of_the_instance(start) -> None:
    rt = start(NXCC_INSTANCE_TYPE="inf2.48xlarge")
    assert rt.cores == tuple(range(24))
    with pytest.raises(NrtError) as err:
        start(NXCC_INSTANCE_TYPE="inf2.48xlarge", NEURON_RT_NUM_CORES="1")
    assert err.value.status == NrtStatus.LOAD_NOT_ENOUGH_NC
    assert f"pid {os.getpid()}" in str(err.value)


def test_num_cores_takes_the_first_free_contiguous_cores(start) -> None:
    a = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="2")
    b = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="2")
    assert a.cores == (0, 1) and b.cores == (2, 3)
    a.close()
    c = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="3")
    assert c.cores == (4, 5, 6)  # nc0-1 are free again but only two of them
    d = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="2")
    assert d.cores == (0, 1)


def test_visible_cores_wins_over_num_cores(start) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="4-5",
               NEURON_RT_NUM_CORES="8")
    assert rt.cores == (4, 5)
    one = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="9")
    assert one.cores == (9,)


def test_visible_cores_out_of_range_names_the_instance(start) -> None:
    with pytest.raises(NrtError) as err:
        start(NXCC_INSTANCE_TYPE="inf2.xlarge", NEURON_RT_VISIBLE_CORES="1-2")
    assert err.value.status == NrtStatus.INVALID
    assert "NEURON_RT_VISIBLE_CORES=1-2" in str(err.value) and "0 to 1" in str(err.value)


def test_num_cores_above_the_instance_is_invalid(start) -> None:
    with pytest.raises(NrtError, match="NEURON_RT_NUM_CORES=3 is out of range"):
        start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_NUM_CORES="3")


def test_a_logical_core_at_lnc2_is_two_physical_cores(start, runtime_env) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn2.48xlarge", NEURON_RT_VISIBLE_CORES="1")
    assert rt.lnc == 2 and rt.cores == (1,)
    held = holders(runtime_env, INSTANCES["trn2.48xlarge"])
    assert sorted(held) == [2, 3]
    # At LNC=1 physical core 3 is logical core 3: refused, it is part of our nc1.
    with pytest.raises(NrtError) as err:
        start(NXCC_INSTANCE_TYPE="trn2.48xlarge", NEURON_LOGICAL_NC_CONFIG="1",
              NEURON_RT_VISIBLE_CORES="3")
    assert err.value.status == NrtStatus.LOAD_NOT_ENOUGH_NC


def test_lnc_sets_the_number_of_cores(start) -> None:
    assert len(start(NXCC_INSTANCE_TYPE="trn2.48xlarge").cores) == 64
    rt = start(NXCC_INSTANCE_TYPE="trn2.3xlarge", NEURON_LOGICAL_NC_CONFIG="1")
    assert rt.cores == tuple(range(8))


def test_lnc_2_is_refused_off_trn2(start) -> None:
    with pytest.raises(NrtError) as err:
        start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_LOGICAL_NC_CONFIG="2")
    assert "NEURON_LOGICAL_NC_CONFIG=2" in str(err.value) and "use 1" in str(err.value)


def test_runtime_dir_moves_the_locks(start, runtime_env, tmp_path, monkeypatch) -> None:
    start(NXCC_INSTANCE_TYPE="trn1.2xlarge")
    assert (runtime_env / "trn1.2xlarge" / "nc000.lock").exists()
    # Another runtime directory is another host: its cores are free.
    other = tmp_path / "elsewhere"
    rt = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NXCC_RUNTIME_DIR=str(other))
    assert rt.cores == (0, 1) and (other / "trn1.2xlarge" / "nc001.lock").exists()


def test_close_gives_the_cores_back(start, runtime_env) -> None:
    rt = start(NXCC_INSTANCE_TYPE="trn1.2xlarge")
    rt.close()
    assert holders(runtime_env, INSTANCES["trn1.2xlarge"]) == {}
    assert start(NXCC_INSTANCE_TYPE="trn1.2xlarge").cores == (0, 1)


def test_lifecycle_status_codes(monkeypatch) -> None:
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "trn1.2xlarge")
    rt = Runtime()
    with pytest.raises(NrtError) as err:
        _ = rt.cores
    assert err.value.status == NrtStatus.UNINITIALIZED
    rt.init()
    rt.close()
    with pytest.raises(NrtError) as err:
        _ = rt.cores
    assert err.value.status == NrtStatus.CLOSED


def test_unusable_runtime_dir_is_a_resource_error(start, tmp_path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(NrtError) as err:
        start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NXCC_RUNTIME_DIR=str(blocker))
    assert err.value.status == NrtStatus.RESOURCE and "NXCC_RUNTIME_DIR" in str(err.value)
