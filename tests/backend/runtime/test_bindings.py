"""Binding collective placeholders at load: shared memory within a logical core, a ring over
the instance topology between cores; shown by `ModelHandle.bindings` and `run
--show-bindings`; the ring algorithms compute what shared memory does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from nxcc.backend.runtime.collective_binding import (
    POINT_TO_POINT,
    RING,
    SHARED_MEMORY,
    Binder,
    Placement,
    bind,
)
from nxcc.backend.runtime.multicore import Communicator, run_cores
from nxcc.backend.runtime.nrt import Runtime
from nxcc.backend.runtime.ring_order import adjacent, device_cycle
from nxcc.backend.runtime.topology import INSTANCES
from tests.cli_helpers import neuronx_cc
from tests.passes.mesh_partition.programs import compile_hlo

TRN1 = INSTANCES["trn1.32xlarge"]


def assert_ring_adjacent(cores: tuple[int, ...], instance=TRN1) -> None:
    for a, b in zip(cores, cores[1:] + cores[:1], strict=True):
        assert adjacent(a, b, instance), f"nc{a} -> nc{b} are not neighbours in {cores}"


def test_lnc2_neff_on_trn2_binds_to_shared_memory(lnc2_neffs: dict[str, Path]) -> None:
    rt = Runtime().init(target="trn2")
    try:
        model = rt.load(lnc2_neffs["megatron_mlp"], start_nc=3)
        bindings = model.bindings
    finally:
        rt.close()
    assert bindings and all(b.algorithm == SHARED_MEMORY for b in bindings)
    assert {b.routes[0].cores for b in bindings} == {(6, 7)}  # logical nc3 = physical 6, 7
    assert all(b.steps == 1 for b in bindings)


def test_spmd_on_trn1_binds_to_rings_of_adjacent_cores(spmd_neffs: dict[str, Path],
                                                       runtime: Runtime) -> None:
    mlp = runtime.load_spmd(spmd_neffs["megatron_mlp"], 8)
    (b,) = mlp.bindings
    assert b.algorithm == RING and b.kind == "all_reduce"
    assert [r.ranks for r in b.routes] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    for route in b.routes:
        assert_ring_adjacent(route.cores)
        assert max(route.hops) == 1
    assert (b.steps, b.bytes, b.bytes_per_step) == (6, 256, 64)  # 2(k-1) steps of bytes/k
    runtime.unload(mlp)
    matmul = runtime.load_spmd(spmd_neffs["contraction_matmul"], 8)
    (b,) = matmul.bindings
    assert b.routes[0].cores == tuple(range(8))
    assert_ring_adjacent(b.routes[0].cores)  # nc7 (device 3) -> nc0 (device 0): torus wrap


def test_whole_torus_ring_and_device_ring() -> None:
    placement = Placement(TRN1, 1, tuple(range(32)))
    b = bind("all_gather", [], [], 64, placement)
    assert b.algorithm == RING and sorted(b.routes[0].cores) == list(range(32))
    assert_ring_adjacent(b.routes[0].cores)
    assert device_cycle(TRN1)[:8] == (0, 1, 2, 3, 7, 6, 5, 4)  # snake through the rows
    inf2 = INSTANCES["inf2.48xlarge"]
    b = bind("all_reduce", [], [], 64, Placement(inf2, 1, tuple(range(24))))
    assert_ring_adjacent(b.routes[0].cores, inf2)


def test_permute_between_cores_is_point_to_point() -> None:
    b = bind("collective_permute", [], [(0, 2), (2, 0)], 16, Placement(TRN1, 1, (0, 1, 2, 3)))
    assert b.algorithm == POINT_TO_POINT and [r.hops for r in b.routes] == [(1, 1), (1, 1)]
    local = bind("collective_permute", [], [(0, 1)], 16, Placement(INSTANCES["trn2.48xlarge"],
                                                                    2, (4, 5)))
    assert local.algorithm == SHARED_MEMORY


def test_binding_names_a_rank_the_placement_lacks() -> None:
    with pytest.raises(ValueError, match=r"rank\(s\) \[4\]"):
        bind("all_reduce", [(0, 4)], [], 8, Placement(TRN1, 1, (0, 1)))


def _run(n: int, placement: Placement, body) -> list:
    group = Communicator(n, Binder(placement))
    return run_cores([lambda k=k: body(group.endpoint(k), k) for k in range(n)], group)


def test_ring_algorithms_compute_what_shared_memory_does() -> None:
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((8, 6)).astype(np.float32) for _ in range(8)]
    ints = [np.arange(10, dtype=np.int32) * (k + 1) for k in range(8)]
    halves = {"replica_groups": ((0, 1, 2, 3), (4, 5, 6, 7))}
    odd = {"replica_groups": ((3, 1, 2, 0, 7, 5, 6, 4),)}  # group order differs from the ring

    def body(ep, k):
        return [ep.collective("all_reduce", [xs[k], ints[k]], {"reduction": "sum", **halves}),
                ep.collective("all_gather", [xs[k]], {"dimension": 1, **odd}),
                ep.collective("reduce_scatter", [xs[k]], {"dimension": 0, "reduction": "max",
                                                          **odd}),
                ep.collective("all_to_all", [xs[k]], {"split_dimension": 0,
                                                      "concat_dimension": 1, **halves}),
                ep.collective("collective_permute", [ints[k]],
                              {"source_target_pairs": ((0, 5), (5, 0))})]

    ring = _run(8, Placement(TRN1, 1, tuple(range(8))), body)
    shared = _run(8, Placement.one_logical_core(8), body)
    for k in range(8):
        for got, want in zip(ring[k], shared[k], strict=True):
            for g, w in zip(got, want, strict=True):
                assert g.dtype == w.dtype and g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)  # summation order
    for k in range(1, 8):  # the ring all-reduce gives every rank of a group the same bits
        same = 0 if k < 4 else 4
        np.testing.assert_array_equal(ring[k][0][0], ring[same][0][0])


def test_show_bindings_on_the_command_line(spmd_neffs: dict[str, Path],
                                           lnc2_neffs: dict[str, Path]) -> None:
    r = neuronx_cc("run", str(spmd_neffs["megatron_mlp"]), "--world-size", "8",
                   "--show-bindings")
    assert r.returncode == 0, r.stderr
    assert "8 logical core(s) nc0-7 on trn1.32xlarge, LNC=1" in r.stdout
    assert "#0 all_reduce: ring of 4 (nc0>nc1>nc2>nc3, hops 0,1,0,1) x2 groups, 6 steps of " \
           "64 bytes" in r.stdout
    r = neuronx_cc("run", str(lnc2_neffs["contraction_matmul"]), "--show-bindings")
    assert r.returncode == 0, r.stderr
    assert "#0 all_reduce: shared_memory of 2 (nc0>nc1), 1 step of 128 bytes" in r.stdout


def test_spmd_ranks_take_a_free_aligned_group(spmd_neffs: dict[str, Path],
                                              runtime: Runtime) -> None:
    runtime.load(spmd_neffs["row_sum"])  # a single rank on nc0
    world = runtime.load_spmd(spmd_neffs["contraction_matmul"], 8)
    assert world.replicas[0].cores == tuple(range(8, 16))
    (b,) = world.bindings
    assert sorted(b.routes[0].cores) == list(range(8, 16))
    assert_ring_adjacent(b.routes[0].cores)


def test_hops_between_instances_are_efa() -> None:
    """16 ranks on two simulated trn1.32xlarge (8 each): one ring per group, leaving each
    instance once; an all-reduce over both is hierarchical, one inside each is a ring."""
    placement = Placement(TRN1, 1, tuple(range(8)) * 2, (0,) * 8 + (1,) * 8)
    whole = bind("all_reduce", [], [], 64, placement)
    assert whole.algorithm == "hierarchical" and whole.steps == 2 * 7 + 1
    (route,) = whole.routes
    assert [route.link(i) for i in range(16)].count("efa") == 2
    assert route.link(7) == "efa" and route.link(15) == "efa"
    inside = bind("all_gather", [list(range(8)), list(range(8, 16))], [], 64, placement)
    assert inside.algorithm == "ring"
    assert all(r.link(i) == "neuronlink" for r in inside.routes for i in range(8))


TWO_RANKS = """HloModule two, num_partitions=2
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  p = f32[4]{0} parameter(0)
  ROOT r = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={{0,1}},
    use_global_device_ids=true, to_apply=add
}
"""


def test_inf2_ranks_on_consecutive_devices_from_any_core(tmp_path: Path, monkeypatch) -> None:
    """The collective seed: on inf2 any even number of ranks on consecutive devices; cores
    1-2 are half of devices 0 and 1."""
    src = tmp_path / "two.hlo"
    src.write_text(TWO_RANKS)
    neff = compile_hlo(src, tmp_path / "two.neff", target="inf2")
    monkeypatch.setenv("NXCC_INSTANCE_TYPE", "inf2.48xlarge")
    monkeypatch.setenv("NEURON_RT_VISIBLE_CORES", "1-2")
    rt = Runtime().init(target="inf2")
    try:
        model = rt.load_spmd(neff, 2)
        assert model.replicas[0].cores == (1, 2)
        (b,) = model.bindings
        assert b.algorithm == RING and b.routes[0].cores == (1, 2)
        x = np.arange(4, dtype=np.float32)
        (out,) = rt.execute(model, {model.inputs[0].name: x}).values()
        np.testing.assert_array_equal(out, 2 * x)
    finally:
        rt.close()


def test_inf2_pair_across_the_ring_wrap() -> None:
    """Cores 23 and 0 of an inf2.48xlarge sit on devices 11 and 0, neighbours on the ring:
    a valid pair, bound as a ring of one hop each way."""
    from nxcc.backend.runtime.collective_groups import check_rank_set

    inf2 = INSTANCES["inf2.48xlarge"]
    check_rank_set(inf2, 1, [23, 0])
    b = bind("all_reduce", [[0, 1]], [], 16, Placement(inf2, 1, (23, 0)))
    assert b.algorithm == RING and b.routes[0].hops == (1, 1)
