"""Fields of HloModuleProto the JAX fixtures do not all exercise: literals of every element
type and layout, shardings and replica groups in each proto form, the module header
(input/output aliasing, partitions, frontend attributes), the schema's own field numbers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from nxcc.compiler.hlo import parse
from nxcc.compiler.hlo.nodes import ArrayShape
from nxcc.compiler.hlo.proto import parse_hlo_proto
from nxcc.compiler.hlo.proto import text_forms as T
from nxcc.compiler.hlo.proto.literals import literal_value
from nxcc.compiler.hlo.proto.schema import message_class
from nxcc.ir.sharding_notation.hlo_sharding import parse_replica_groups, parse_sharding
from tests.compiler.hlo.helpers import TREE_SKIP, assert_same_tree
from tests.compiler.hlo.proto.proto_builders import TINY_TEXT, tiny

VALUES = [[0, 1, 2], [3, 4, 5]]
# element type -> (PrimitiveType, field, stored form of VALUES)
LITERALS = {
    "pred": (1, "preds", [False, True, True, True, True, True]),
    "s8": (2, "s8s", np.array(VALUES, np.int8).tobytes()),
    "u8": (6, "u8s", np.array(VALUES, np.uint8).tobytes()),
    "s16": (3, "s16s", np.array(VALUES, "<i2").tobytes()),
    "u16": (7, "u16s", np.array(VALUES, "<u2").tobytes()),
    "f16": (10, "f16s", np.array(VALUES, "<f2").tobytes()),
    "bf16": (16, "bf16s", np.array(VALUES, ml_dtypes.bfloat16).tobytes()),
    "s32": (4, "s32s", [0, 1, 2, 3, 4, 5]),
    "u32": (8, "u32s", [0, 1, 2, 3, 4, 5]),
    "s64": (5, "s64s", [0, 1, 2, 3, 4, 5]),
    "u64": (9, "u64s", [0, 1, 2, 3, 4, 5]),
    "f32": (11, "f32s", [0, 1, 2, 3, 4, 5]),
    "f64": (12, "f64s", [0, 1, 2, 3, 4, 5]),
    "s4": (21, "s4s", np.array(VALUES, np.int8).tobytes()),
    "u4": (22, "u4s", np.array(VALUES, np.uint8).tobytes()),
    "f8e4m3fn": (20, "f8e4m3fns", np.array(VALUES, ml_dtypes.float8_e4m3fn).tobytes()),
    "f8e5m2": (19, "f8e5m2s", np.array(VALUES, ml_dtypes.float8_e5m2).tobytes()),
}


@pytest.mark.parametrize("dtype", LITERALS)
def test_literal_of_every_element_type(dtype: str) -> None:
    ptype, field, stored = LITERALS[dtype]
    lit = message_class("LiteralProto")(**{field: stored})
    lit.shape.element_type = ptype
    lit.shape.dimensions.extend([2, 3])
    value = literal_value(lit, ArrayShape(dtype, (2, 3)))
    assert value.shape == (2, 3)
    want = np.array(VALUES).astype(bool) if dtype == "pred" else np.array(VALUES)
    np.testing.assert_array_equal(value.astype(np.float64), want.astype(np.float64))


def test_literal_in_a_column_major_layout_and_the_tiny_module_match_their_text() -> None:
    from_proto = parse_hlo_proto(tiny().SerializeToString(), "tiny.pb")
    np.testing.assert_array_equal(from_proto.entry.instructions[1].literal,
                                  [[1, 2, 3], [4, 5, 6]])
    assert_same_tree(from_proto, parse(TINY_TEXT), skip=TREE_SKIP)


def _sharding(**fields: object) -> object:
    return message_class("OpSharding")(**fields)


@pytest.mark.parametrize("fields, text", [
    ({"type": 0}, "{replicated}"),
    ({"type": 1, "tile_assignment_devices": [3]}, "{maximal device=3}"),
    ({"type": 3, "tile_assignment_dimensions": [2, 1], "tile_assignment_devices": [1, 0]},
     "{devices=[2,1]1,0}"),
    ({"type": 3, "tile_assignment_dimensions": [4, 2], "iota_reshape_dims": [2, 4],
      "iota_transpose_perm": [1, 0], "replicate_on_last_tile_dim": True},
     "{devices=[4,2]<=[2,4]T(1,0) last_tile_dim_replicate}"),
    ({"type": 3, "tile_assignment_dimensions": [2, 2], "iota_reshape_dims": [4],
      "iota_transpose_perm": [0], "last_tile_dims": [4]},
     "{devices=[2,2]<=[4] last_tile_dims={manual}}"),
    ({"type": 2, "tuple_shardings": [_sharding(type=0), _sharding(type=4)]},
     "{{replicated}, {manual}}"),
    ({"type": 0, "is_shard_group": True, "shard_group_id": 2, "shard_group_type": 1},
     "{replicated shard_like 2}"),
])
def test_sharding_text(fields: dict, text: str) -> None:
    written = T.sharding(_sharding(**fields))
    assert written == text
    parse_sharding(written)


def test_a_named_sharding_is_refused() -> None:
    with pytest.raises(T.ProtoFieldError, match="NamedShardingProto"):
        T.sharding(_sharding(named_sharding=b"\x12\x00"))


def _instr(**fields: object) -> object:
    return message_class("HloInstructionProto")(**fields)


def test_replica_groups_in_every_proto_form() -> None:
    group = message_class("ReplicaGroup")
    iota = message_class("IotaReplicaGroupListProto")(
        num_replica_groups=2, num_devices_per_group=4, iota_reshape_dims=[4, 2],
        iota_transpose_perm=[1, 0])
    legacy = _instr(replica_groups=[group(replica_ids=[0, 1]), group(replica_ids=[2, 3])])
    listed = _instr()
    listed.collective_device_list.replica_groups.extend([group(replica_ids=[1, 0])])
    v1 = _instr()
    v1.collective_device_list.iota_replica_group_list.CopyFrom(iota)
    v2 = _instr(iota_collective_device_list=iota)
    mesh = _instr()
    m = mesh.mesh_axes_replica_group_list
    for name, size in (("x", 2), ("y", 4)):
        m.mesh.axes.add(name=name, size=size)
    m.axes.add(mesh_axis_index=1)
    expected = [((0, 1), (2, 3)), ((1, 0),), ((0, 2, 4, 6), (1, 3, 5, 7)),
                ((0, 2, 4, 6), (1, 3, 5, 7)), ((0, 1, 2, 3), (4, 5, 6, 7))]
    for p, want in zip((legacy, listed, v1, v2, mesh), expected, strict=True):
        assert parse_replica_groups(T.replica_groups(p)).groups == want, T.replica_groups(p)
    assert T.replica_groups(_instr()) == "{}"


def test_the_header_keeps_aliasing_partitions_and_frontend_attributes() -> None:
    m = tiny()
    m.input_output_alias.entries.add(output_shape_index=[], parameter_number=0, kind=2)
    m.device_assignment.computation_count = 4
    m.device_assignment.replica_count = 2
    m.frontend_attributes.map["xla.sdy.meshes"] = "{mesh = #sdy.mesh<[\"x\"=4]>}"
    m.frontend_attributes.map["note"] = 'a "quoted" value'
    tree = parse_hlo_proto(m.SerializeToString())
    attrs = tree.attrs
    assert attrs["input_output_alias"].raw == "{ {}: (0, {}, must-alias) }"
    assert (attrs["num_partitions"].raw, attrs["replica_count"].raw) == ("4", "2")
    assert dict(attrs["frontend_attributes"].value) == dict(m.frontend_attributes.map)


def test_the_schema_has_xla_field_numbers() -> None:
    """A few numbers checked against xla/service/hlo.proto and xla/xla_data.proto."""
    numbers = {
        ("HloModuleProto", "entry_computation_id"): 6,
        ("HloModuleProto", "computations"): 3,
        ("HloComputationProto", "root_id"): 6,
        ("HloInstructionProto", "operand_ids"): 36,
        ("HloInstructionProto", "called_computation_ids"): 38,
        ("HloInstructionProto", "comparison_direction"): 63,
        ("HloInstructionProto", "collective_device_list"): 87,
        ("LiteralProto", "bf16s"): 13,
        ("ShapeProto", "tuple_shapes"): 4,
        ("OpSharding", "iota_reshape_dims"): 9,
        ("ConvolutionDimensionNumbers", "input_spatial_dimensions"): 11,
    }
    for (msg, field), number in numbers.items():
        assert message_class(msg).DESCRIPTOR.fields_by_name[field].number == number
