"""The HLO frontend's view of placement: newer XLA's mesh replica groups, SPMD programs
(`Module.spmd`) versus annotated global programs (`Value.sharding`), and what one mesh axis
can express."""

from __future__ import annotations

import pytest

from nxcc.compiler.hlo import HloError, import_hlo, parse
from nxcc.compiler.hlo.attributes import parse_attribute
from nxcc.driver.errors import CompileError
from nxcc.ir.sharding import Sharding
from nxcc.ir.sharding_notation.hlo_sharding import parse_sharding
from nxcc.ir.sharding_notation.tile_layout import to_ir_sharding
from nxcc.passes.sharding.search import fit_to_cores
from tests.passes.mesh_partition.programs import FIXTURES, compile_hlo

ROW = "ROOT r = f32[4]{0} all-reduce(p), channel_id=1, replica_groups={}, " \
      "use_global_device_ids=true, to_apply=add"
MODULE = """HloModule m, num_partitions=8
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY main {
  p = f32[4]{0} parameter(0)
  GROUPS
}
"""


@pytest.mark.parametrize("text, groups", [
    ("mesh['axis_0'=2,'axis_1'=4] {'axis_1'}", ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("mesh['axis_0'=2,'axis_1'=4] {'axis_0'}", ((0, 4), (1, 5), (2, 6), (3, 7))),
    ("mesh['x'=8] {'x':(1)2}", ((0, 4), (1, 5), (2, 6), (3, 7))),
    ("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}",
     ((0, 1, 2, 3), (4, 5, 6, 7))),
    ("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_2'}",
     ((0, 4), (1, 5), (2, 6), (3, 7))),
])
def test_newer_mesh_replica_groups(text: str, groups: tuple) -> None:
    assert parse_attribute("replica_groups", text).groups == groups
    module = MODULE.replace("GROUPS", ROW.replace("{}", text, 1))
    for engine in ("fast", "lark"):
        root = parse(module, engine=engine).entry.root
        assert root.attrs["replica_groups"].value.groups == groups, engine


def test_partitioned_program_becomes_spmd() -> None:
    m = import_hlo(str(FIXTURES / "megatron_mlp.compiled.hlo"))
    assert m.spmd is not None and m.spmd.world_size == 8
    x = m.spmd.params[0]
    assert (x.local_shape, x.global_shape, x.layout.copies) == ((4, 16), (8, 16), 4)
    assert all(p.sharding is None for p in m.entry_function.params)
    assert m.spmd.results[0].layout is None


def test_annotated_program_gets_value_shardings() -> None:
    m = import_hlo(str(FIXTURES / "megatron_mlp.lowered.hlo"))
    assert m.spmd is None
    assert [str(p.sharding) for p in m.entry_function.params] == [
        "sharding<[2,1]>", "sharding<[1,4]>", "sharding<[4]>", "sharding<[4,1]>",
        "sharding<replicated>"]


@pytest.mark.parametrize("text, rank, want, why", [
    ("{devices=[2,1]0,1}", 2, Sharding.split(2, 0, 2), None),
    ("{devices=[2,1]1,0}", 2, Sharding.split(2, 0, 2), None),  # device order is not kept
    ("{replicated}", 1, Sharding.replicated(), None),
    ("{devices=[1,4,2]<=[2,4]T(1,0) last_tile_dim_replicate}", 2, Sharding.split(2, 1, 4), None),
    ("{devices=[1,1,8]<=[8] last_tile_dim_replicate}", 2, Sharding.replicated(), None),
    ("{devices=[2,4]<=[8]}", 2, Sharding.replicated(), "multi-axis mesh"),
    ("{maximal device=1}", 2, Sharding.replicated(), "not a split"),
    ("{devices=[2,1,2]<=[4] last_tile_dims={manual}}", 2, Sharding.replicated(), "manual"),
    ("{unknown}", 2, None, None),
])
def test_what_one_mesh_axis_expresses(text: str, rank: int, want, why) -> None:
    got, reason = to_ir_sharding(parse_sharding(text), rank, text)
    assert got == want
    assert (reason is None) if why is None else (why in reason)


def test_annotations_for_another_mesh_size_keep_their_dimension() -> None:
    assert fit_to_cores(Sharding.split(2, 1, 4), 2) == Sharding.split(2, 1, 2)
    assert fit_to_cores(Sharding.partial(2, 8), 2) == Sharding.partial(2, 2)
    assert fit_to_cores(Sharding.replicated(), 2) == Sharding.replicated()


def test_sharding_over_the_wrong_device_count_is_an_error() -> None:
    text = MODULE.replace("GROUPS", "ROOT r = f32[4]{0} negate(p)").replace(
        "p = f32[4]{0} parameter(0)", "p = f32[4]{0} parameter(0), sharding={devices=[4]<=[4]}")
    with pytest.raises(HloError, match="over the module's 8 partitions"):
        import_hlo(text)


def test_spmd_program_is_not_sharded_again(tmp_path) -> None:
    with pytest.raises(CompileError, match="SPMD program .* compile it with -lnc 1") as info:
        compile_hlo(FIXTURES / "row_sum.compiled.hlo", tmp_path / "r.neff", "trn2", 2)
    assert info.value.code == "NCC_EARG001"


@pytest.mark.parametrize("text", [
    "{devices=[4,2]<=[2,2147483648]T(1,0) last_tile_dim_replicate}",
    "{devices=[2]<=[-2]}",
])
def test_an_iota_over_too_many_devices_is_refused_before_it_is_built(text: str) -> None:
    """(Found by the stablehlo fuzz kind: an iota of 2^32 devices, a 32 GiB arange.)"""
    from nxcc.ir.sharding_notation.cursor import PieceError
    from nxcc.ir.sharding_notation.hlo_sharding import parse_replica_groups

    with pytest.raises(PieceError, match="over the limit of 65536|negative"):
        parse_sharding(text)
    with pytest.raises(PieceError, match="over the limit of 65536"):
        parse_replica_groups("[2,2]<=[65536,2]")
    with pytest.raises(PieceError, match="over the limit of 65536"):
        parse_replica_groups("@mesh<x=65536,y=2> {x}")
