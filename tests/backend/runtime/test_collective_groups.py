"""Collective groups: rank counts per topology, placement, and ranks that must agree."""

from __future__ import annotations

import pytest

from nxcc.backend.runtime.collective_groups import check_rank_set, possible_rank_counts
from nxcc.backend.runtime.status import NrtError, NrtStatus
from nxcc.backend.runtime.topology import INSTANCES
from tests.backend.runtime.neffs import with_collectives
from tests.backend.runtime.procs import holders, start_holder

ALL_REDUCE = [{"id": 0, "kind": "all_reduce", "reduction": "sum", "replica_groups": [[0, 1]],
               "dtype": "f32", "shape": [4], "bytes": 16}]
ALL_GATHER = [{"id": 0, "kind": "all_gather", "replica_groups": [[0, 1]], "dtype": "f32",
               "shape": [4], "bytes": 16}]


@pytest.mark.parametrize(
    ("instance", "lnc", "counts"),
    [
        ("trn1.32xlarge", 1, (2, 8, 32)),
        ("trn1n.32xlarge", 1, (2, 8, 32)),
        ("trn1.2xlarge", 1, (2,)),
        ("inf2.xlarge", 1, (2,)),
        ("inf2.24xlarge", 1, (2, 4, 6, 8, 10, 12)),
        ("inf2.48xlarge", 1, tuple(range(2, 25, 2))),
        ("trn2.48xlarge", 2, (2, 4, 16, 64)),
        ("trn2.48xlarge", 1, (2, 4, 8, 32, 128)),
        ("trn2.3xlarge", 2, (2, 4)),
        ("inf1.6xlarge", 1, ()),
    ],
)
def test_possible_rank_counts(instance: str, lnc: int, counts: tuple[int, ...]) -> None:
    assert possible_rank_counts(INSTANCES[instance], lnc) == counts


def test_refused_count_says_which_are_possible() -> None:
    with pytest.raises(NrtError) as err:
        check_rank_set(INSTANCES["trn1.32xlarge"], 1, [0, 1, 2, 3])
    assert err.value.status == NrtStatus.INVALID
    assert "4 ranks is not possible" in str(err.value) and "2, 8 or 32 ranks" in str(err.value)
    with pytest.raises(NrtError, match="only|supports groups of 2 ranks"):
        check_rank_set(INSTANCES["trn1.2xlarge"], 1, [0, 1, 1, 0][:3])
    with pytest.raises(NrtError, match="any even number from 2 to 24, on consecutive devices"):
        check_rank_set(INSTANCES["inf2.48xlarge"], 1, [0, 1, 2])


def test_rank_placement_follows_the_topology() -> None:
    trn1 = INSTANCES["trn1.32xlarge"]
    check_rank_set(trn1, 1, list(range(8, 16)))  # a torus row
    with pytest.raises(NrtError, match="starting at a multiple of 8"):
        check_rank_set(trn1, 1, list(range(4, 12)))
    inf2 = INSTANCES["inf2.48xlarge"]
    check_rank_set(inf2, 1, [2, 3, 4, 5, 6, 7])  # devices 1-3
    check_rank_set(inf2, 1, [1, 2])  # half of devices 0 and 1: consecutive devices
    check_rank_set(inf2, 1, [3, 4, 5, 6])  # devices 1-3, from the second core of device 1
    check_rank_set(inf2, 1, [23, 0])  # devices 11 and 0, joined by the ring's wrap-around
    check_rank_set(INSTANCES["inf2.24xlarge"], 1, [9, 10, 11, 0, 1, 2])
    with pytest.raises(NrtError, match="consecutive devices"):
        check_rank_set(inf2, 1, [0, 1, 4, 5])
    with pytest.raises(NrtError, match="consecutive devices"):
        check_rank_set(inf2, 1, [1, 3])
    with pytest.raises(NrtError, match="any even number"):
        check_rank_set(inf2, 1, [1, 2, 3])


def test_ranks_with_the_same_collectives_form_a_group(start, spin, tmp_path) -> None:
    neff = with_collectives(spin, tmp_path / "ar.neff", ALL_REDUCE)
    a = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="0")
    b = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="1")
    r0 = a.load_collectives(neff, rank=0, world_size=2, group="g")
    r1 = b.load_collectives(neff, rank=1, world_size=2, group="g")
    assert (r0.cores, r1.cores) == ([0], [1])
    b.unload(r1)  # leaves the group: rank 1 may load again
    b.load_collectives(neff, rank=1, world_size=2, group="g")


def test_ranks_that_loaded_different_collectives_fail_at_load(start, spin, tmp_path) -> None:
    first = with_collectives(spin, tmp_path / "ar.neff", ALL_REDUCE)
    other = with_collectives(spin, tmp_path / "ag.neff", ALL_GATHER)
    a = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="0")
    b = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_VISIBLE_CORES="1")
    a.load_collectives(first, rank=0, world_size=2)
    with pytest.raises(NrtError) as err:
        b.load_collectives(other, rank=1, world_size=2)
    msg = str(err.value)
    assert "loaded different collectives from rank 0" in msg
    assert "all_reduce" in msg and "all_gather" in msg
    assert b.models == {}  # the failed load left nothing behind


def test_group_disagreements_fail(start, spin, tmp_path) -> None:
    neff = with_collectives(spin, tmp_path / "ar.neff", ALL_REDUCE)
    rt = start(NXCC_INSTANCE_TYPE="trn1.32xlarge", NEURON_RT_NUM_CORES="8")
    rt.load_collectives(neff, start_nc=0, rank=0, world_size=8, group="w")
    with pytest.raises(NrtError, match="rank 0 of collective group 'w' is already loaded"):
        rt.load_collectives(neff, start_nc=1, rank=0, world_size=8, group="w")
    with pytest.raises(NrtError, match="world size 8, rank 1 says 2"):
        rt.load_collectives(neff, start_nc=1, rank=1, world_size=2, group="w")
    with pytest.raises(NrtError, match="2, 8 or 32 ranks"):
        rt.load_collectives(neff, start_nc=1, rank=1, world_size=4, group="four")


def test_a_complete_group_is_checked_against_the_topology(start, spin, tmp_path) -> None:
    neff = with_collectives(spin, tmp_path / "ar.neff", ALL_REDUCE)
    rt = start(NXCC_INSTANCE_TYPE="inf2.48xlarge", NEURON_RT_VISIBLE_CORES="1-3")
    rt.load_collectives(neff, start_nc=0, rank=0, world_size=2)  # nc1
    with pytest.raises(NrtError, match="consecutive devices"):
        rt.load_collectives(neff, start_nc=2, rank=1, world_size=2)  # nc3: not next to nc1
    rt.load_collectives(neff, start_nc=1, rank=1, world_size=2)  # nc2: devices 0 and 1


def test_ranks_in_two_processes_must_agree(start, spin, tmp_path) -> None:
    neff = with_collectives(spin, tmp_path / "ar.neff", ALL_REDUCE)
    other = with_collectives(spin, tmp_path / "ag.neff", ALL_GATHER)
    env = {"NXCC_INSTANCE_TYPE": "trn1.2xlarge", "NEURON_RT_VISIBLE_CORES": "0"}
    with holders() as started:
        rank0 = start_holder(started, neff, "0", "2", "g", **env)
        assert rank0.ok
        rt = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_VISIBLE_CORES="1")
        with pytest.raises(NrtError) as err:
            rt.load_collectives(other, rank=1, world_size=2, group="g")
        assert f"rank 0 (pid {rank0.report['pid']})" in str(err.value)
        rank0.kill()  # SIGKILL: its group entry and its core die with it
    rt.load_collectives(other, rank=1, world_size=2, group="g")
    again = start(NXCC_INSTANCE_TYPE="trn1.2xlarge", NEURON_RT_VISIBLE_CORES="0")
    again.load_collectives(other, rank=0, world_size=2, group="g")
