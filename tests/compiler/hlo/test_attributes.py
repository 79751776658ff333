"""Every attribute form real dumps contain parses to its typed value; unknown attributes
stay opaque; constants, tables, comments, layouts and names in all their spellings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nxcc.compiler.hlo import parse
from nxcc.compiler.hlo.attributes import ConvDims, Window, parse_attribute
from nxcc.compiler.hlo.nodes import ArrayShape, Opaque, TupleShape
from nxcc.ir.sharding_notation.hlo_sharding import ReplicaGroups, Sharding
from tests.compiler.hlo.helpers import assert_same_tree


def test_dimension_lists() -> None:
    assert parse_attribute("dimensions", "{1,0}") == (1, 0)
    assert parse_attribute("dimensions", "{}") == ()
    assert parse_attribute("dimensions", "{ 2, 0 ,1 }") == (2, 0, 1)
    for name in ("lhs_contracting_dims", "rhs_contracting_dims", "lhs_batch_dims",
                 "rhs_batch_dims", "slice_sizes", "dynamic_slice_sizes"):
        assert parse_attribute(name, "{0,2}") == (0, 2)


def test_slice() -> None:
    assert parse_attribute("slice", "{[0:2], [1:5:2]}") == ((0, 2, 1), (1, 5, 2))
    assert parse_attribute("slice", "{}") == ()


def test_window() -> None:
    w = parse_attribute("window", "{size=3x3 stride=2x1 pad=1_1x0_2 lhs_dilate=1x2 "
                                  "rhs_dilate=2x1 rhs_reversal=0x1}")
    assert w == Window((3, 3), (2, 1), ((1, 1), (0, 2)), (1, 2), (2, 1), (0, 1))
    w = parse_attribute("window", "{size=2 pad=-1_1}")
    assert w == Window((2,), (1,), ((-1, 1),), (1,), (1,), (0,))
    assert parse_attribute("window", "{}").rank == 0


def test_dim_labels() -> None:
    d = parse_attribute("dim_labels", "b01f_01io->b01f")
    assert d == ConvDims(0, 3, (1, 2), 2, 3, (0, 1), 0, 3, (1, 2))
    d = parse_attribute("dim_labels", "bf01_oi01->bf01")
    assert (d.input_feature, d.kernel_input, d.kernel_output, d.output_spatial) == (1, 1, 0,
                                                                                     (2, 3))
    d = parse_attribute("dim_labels", "b012f_012io->b012f")
    assert d.input_spatial == (1, 2, 3)
    assert parse_attribute("dim_labels", "bf_io->bf").input_spatial == ()


def test_padding() -> None:
    assert parse_attribute("padding", "0_0x1_1_0") == ((0, 0, 0), (1, 1, 0))
    assert parse_attribute("padding", "-1_2_1") == ((-1, 2, 1),)


def test_gather_and_scatter_dimension_numbers() -> None:
    names = ("offset_dims", "collapsed_slice_dims", "start_index_map", "operand_batching_dims",
             "start_indices_batching_dims", "update_window_dims", "inserted_window_dims",
             "scatter_dims_to_operand_dims", "input_batching_dims",
             "scatter_indices_batching_dims")
    for name in names:
        assert parse_attribute(name, "{1}") == (1,)
    assert parse_attribute("index_vector_dim", "1") == 1
    assert parse_attribute("indices_are_sorted", "true") is True
    assert parse_attribute("unique_indices", "false") is False


def test_comparison_direction_and_type() -> None:
    for d in ("EQ", "NE", "LT", "LE", "GT", "GE"):
        assert parse_attribute("direction", d) == d
    for t in ("FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"):
        assert parse_attribute("type", t) == t


def test_computation_references() -> None:
    for name in ("to_apply", "condition", "body", "true_computation", "false_computation",
                 "select", "scatter"):
        assert parse_attribute(name, "%region_0.2") == "region_0.2"
        assert parse_attribute(name, "region_0.2") == "region_0.2"
    assert parse_attribute("calls", "%fused_computation") == ("fused_computation",)
    assert parse_attribute("branch_computations", "{%a, b.1, %c}") == ("a", "b.1", "c")


def test_replica_groups_all_forms() -> None:
    assert parse_attribute("replica_groups", "{{0,1},{2,3}}") == ReplicaGroups(
        ((0, 1), (2, 3)), "list")
    assert parse_attribute("replica_groups", "{}").groups == ()
    assert parse_attribute("replica_groups", "[2,2]<=[4]").groups == ((0, 1), (2, 3))
    assert parse_attribute("replica_groups", "[2,2]<=[2,2]T(1,0)").groups == ((0, 2), (1, 3))
    # XLA's own example: [2,10]<=[4,5]T(1,0).
    g = parse_attribute("replica_groups", "[2,10]<=[4,5]T(1,0)").groups
    assert g[0] == (0, 5, 10, 15, 1, 6, 11, 16, 2, 7)
    mesh = parse_attribute("replica_groups", "@mesh<a=3,b=5> {a}")
    assert mesh.form == "mesh" and len(mesh.groups) == 5 and mesh.groups[0] == (0, 5, 10)
    assert parse_attribute("replica_groups", "@mesh<x=4,y=4> {x,y}").groups == (
        tuple(range(16)),)
    sub = parse_attribute("replica_groups", "@mesh<a=8> {a:(1)2}").groups
    assert sub == ((0, 4), (1, 5), (2, 6), (3, 7))
    explicit = parse_attribute("replica_groups", "@mesh<x=2,y=2>(0,2,1,3) {y}").groups
    assert explicit == ((0, 2), (1, 3))
    assert parse_attribute("channel_id", "7") == 7
    assert parse_attribute("source_target_pairs", "{{0,1},{1,0}}") == ((0, 1), (1, 0))


def test_sharding_all_forms() -> None:
    assert parse_attribute("sharding", "{replicated}") == Sharding("replicated")
    assert parse_attribute("sharding", "{manual}").kind == "manual"
    m = parse_attribute("sharding", "{maximal device=3}")
    assert (m.kind, m.device) == ("maximal", 3)
    t = parse_attribute("sharding", "{devices=[2,1]0,1}")
    assert (t.kind, t.tile_dims, t.devices) == ("tiled", (2, 1), (0, 1))
    i = parse_attribute("sharding", "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}")
    assert i.tile_dims == (4, 1, 2) and i.last_tile_dim_replicate
    assert i.devices == (0, 4, 1, 5, 2, 6, 3, 7)
    assert parse_attribute("sharding", "{devices=[2,2]<=[4]}").devices == (0, 1, 2, 3)
    lt = parse_attribute("sharding", "{devices=[2,1,2]0,1,2,3 last_tile_dims={manual}}")
    assert lt.last_tile_dims == ("manual",)
    tup = parse_attribute("sharding", "{{replicated}, {maximal device=0}, "
                                      "{devices=[2]0,1 metadata={op_name=\"a\"}}}")
    assert tup.kind == "tuple" and [e.kind for e in tup.elements] == ["replicated", "maximal",
                                                                       "tiled"]
    assert tup.elements[2].metadata == '{op_name="a"}'
    assert "shard_as 1" in parse_attribute("sharding", "{replicated shard_as 1}").extra


def test_metadata_backend_config_frontend_attributes() -> None:
    md = parse_attribute("metadata", '{op_type="Add" op_name="jit(f)/add" '
                                     'source_file="/x.py" source_line=12 stack_frame_id=3}')
    assert md["op_name"] == "jit(f)/add" and md["source_line"] == 12
    assert parse_attribute("backend_config", '"{\\"a\\":1}"') == {"a": 1}
    assert parse_attribute("backend_config", '"opaque text"') == "opaque text"
    assert parse_attribute("backend_config", '{"fusion_config":{"kind":"__x"},"n":[]}') == {
        "fusion_config": {"kind": "__x"}, "n": []}
    fa = parse_attribute("frontend_attributes", '{_xla_compute_type="host",b="2"}')
    assert dict(fa) == {"_xla_compute_type": "host", "b": "2"}


def test_unknown_attributes_are_opaque() -> None:
    assert parse_attribute("frobnicate", "{a {b} [c]}") == Opaque("{a {b} [c]}")
    assert parse_attribute("statistics", "{visualizing_index=1}") == Opaque(
        "{visualizing_index=1}")


MODULE = r'''
HloModule everything, is_scheduled=true, entry_computation_layout={(f32[2,3]{1,0})->f32[]}, some_new_flag={a={b}}

FileNames
1 "/tmp/a.py"

FunctionNames
1 "<module>"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=4 end_column=37}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

%max.1 (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  ROOT %m = f32[] maximum(f32[] %x, f32[] %y)
}

ENTRY %main.9 (p: f32[2,3], q: (s32[], f32[2])) -> f32[] {
  %p = f32[2,3]{1,0:T(8,128)(2,1)} parameter(0), sharding={devices=[2,1]<=[2]}
  %q = (s32[], f32[2]{0}) parameter(1)
  c0 = f32[] constant(-inf)
  c1 = f32[2,2]{1,0} constant({ { 1, 2.5 }, { inf, -nan } })
  c2 = pred[3] constant({true, false, true})
  c3 = f32[4] constant({...})
  c4 = s32[2] constant(s32[2] {7, -8})
  c5 = (f32[], s32[]) constant((1.5, 2))
  r = f32[2] reduce(%p, c0), dimensions={1}, to_apply=max.1, metadata={op_name="r" source_line=3}
  t = (f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, f32[2]{0}, /*index=5*/f32[2]{0}) tuple(r, r, r, r, r, /*index=5*/r)
  g = f32[2] get-tuple-element(t), index=5, backend_config="{}", frontend_attributes={k="v"}, unknown_thing={{1}}
  ROOT out = f32[] reduce(g, c0), dimensions={0}, to_apply=%add
}
'''


@pytest.mark.parametrize("engine", ["fast", "lark"])
def test_module_forms(engine: str) -> None:
    m = parse(MODULE, "everything.hlo", engine)
    assert m.name == "everything" and m.entry.name == "main.9"
    assert isinstance(m.attrs["entry_computation_layout"].value, Opaque)
    assert m.tables["FileNames"] == {1: "/tmp/a.py"}
    assert m.tables["FileLocations"][1]["line"] == 7
    assert m.tables["StackFrames"][1]["parent_frame_id"] == 1
    add, mx, entry = m.computations
    assert add.params is None and mx.params == [("x", ArrayShape("f32", ())),
                                                ("y", ArrayShape("f32", ()))]
    assert entry.params[1][1] == TupleShape((ArrayShape("s32", ()), ArrayShape("f32", (2,))))
    by = {i.name: i for i in entry.instructions}
    assert by["p"].shape == ArrayShape("f32", (2, 3), (1, 0), "T(8,128)(2,1)")
    assert by["p"].attr("sharding").devices == (0, 1)
    assert by["c0"].literal == -math.inf
    np.testing.assert_array_equal(by["c1"].literal,
                                  np.array([[1, 2.5], [np.inf, np.nan]], np.float32))
    np.testing.assert_array_equal(by["c2"].literal, [True, False, True])
    assert by["c3"].literal_elided and by["c3"].literal is None
    np.testing.assert_array_equal(by["c4"].literal, np.array([7, -8], np.int32))
    assert by["c5"].literal[0] == np.float32(1.5) and by["c5"].literal[1] == 2
    assert by["t"].operands == ["r"] * 6
    assert by["g"].attr("index") == 5 and by["g"].attr("unknown_thing") == Opaque("{{1}}")
    assert by["out"].root and by["out"].attr("to_apply") == "add"
    assert mx.instructions[2].operand_shapes == [ArrayShape("f32", ()), ArrayShape("f32", ())]


def test_engines_agree_on_the_module_forms() -> None:
    assert_same_tree(parse(MODULE, "e.hlo", "fast"), parse(MODULE, "e.hlo", "lark"))
